"""A dict whose keys are also attributes (a small stand-in for addict)."""


class Dict(dict):
    def __getattr__(self, name):
        return self[name]

    def __setattr__(self, name, value):
        self[name] = value

    def __missing__(self, name):
        value = self[name] = type(self)()
        return value

    def to_dict(self):
        """A plain dict copy, nested Dicts included."""
        return {k: v.to_dict() if isinstance(v, Dict) else v for k, v in self.items()}
