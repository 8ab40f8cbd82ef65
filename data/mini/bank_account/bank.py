"""Accounts shared by several threads (e.g. a payment worker pool).

Every withdrawal is written to an audit trail before the money leaves the
account; the audit service answers slowly (simulated by a short sleep).
"""

from __future__ import annotations

import threading
import time

AUDIT_LATENCY = 0.05  # seconds one audit call takes


class InsufficientFunds(Exception):
    pass


class Account:
    def __init__(self, owner: str, balance: int = 0):
        self.owner = owner
        self.balance = balance
        self.audit_trail: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def deposit(self, amount: int) -> None:
        if amount <= 0:
            raise ValueError("amount must be positive")
        with self._lock:
            self.balance += amount
            self.audit_trail.append(("deposit", amount))

    def withdraw(self, amount: int) -> int:
        """Take ``amount`` out; return the new balance.

        Raises:
            InsufficientFunds: the balance is smaller than ``amount``.
        """
        if amount <= 0:
            raise ValueError("amount must be positive")
        if self.balance < amount:
            raise InsufficientFunds(f"{self.owner} has {self.balance}, needs {amount}")
        self._audit("withdraw", amount)
        with self._lock:
            self.balance -= amount
            return self.balance

    def _audit(self, kind: str, amount: int) -> None:
        time.sleep(AUDIT_LATENCY)
        self.audit_trail.append((kind, amount))


def transfer(source: Account, target: Account, amount: int) -> None:
    """Move ``amount`` from ``source`` to ``target``; nothing moves on failure."""
    source.withdraw(amount)
    target.deposit(amount)
