from .addict import Dict

__all__ = ['Dict']
