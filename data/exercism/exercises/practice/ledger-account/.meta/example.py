class Account:
    def __init__(self, overdraft=0):
        self._overdraft = overdraft
        self._entries = None  # None while the account is closed

    def _require_open(self):
        if self._entries is None:
            raise ValueError("the account is closed")

    @staticmethod
    def _check_amount(cents):
        if not isinstance(cents, int) or cents <= 0:
            raise ValueError("the amount must be a positive number of cents")

    def open(self):
        if self._entries is not None:
            raise ValueError("the account is already open")
        self._entries = []

    def close(self):
        self._require_open()
        self._entries = None

    def deposit(self, cents):
        self._require_open()
        self._check_amount(cents)
        self._entries.append(("deposit", cents))

    def withdraw(self, cents):
        self._require_open()
        self._check_amount(cents)
        if self.balance() - cents < -self._overdraft:
            raise ValueError("insufficient funds")
        self._entries.append(("withdraw", cents))

    def balance(self):
        self._require_open()
        return sum(c if kind == "deposit" else -c for kind, c in self._entries)

    def history(self):
        self._require_open()
        return list(self._entries)
