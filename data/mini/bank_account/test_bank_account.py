import threading

import pytest

from bank import Account, InsufficientFunds, transfer


def run_together(*jobs):
    """Start every job at the same moment; return the exceptions they raised."""
    barrier = threading.Barrier(len(jobs))
    errors = []

    def runner(job):
        barrier.wait()
        try:
            job()
        except Exception as exc:  # collected for the assertions
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_single_withdrawal():
    account = Account("ana", 100)
    assert account.withdraw(40) == 60
    assert account.audit_trail == [("withdraw", 40)]


def test_overdraft_is_refused():
    account = Account("ben", 10)
    with pytest.raises(InsufficientFunds):
        account.withdraw(11)
    assert account.balance == 10


def test_transfer_moves_money():
    source, target = Account("cleo", 50), Account("dan", 0)
    transfer(source, target, 20)
    assert (source.balance, target.balance) == (30, 20)


def test_concurrent_withdrawals_never_overdraw():
    account = Account("eve", 100)
    errors = run_together(lambda: account.withdraw(70), lambda: account.withdraw(70))
    assert account.balance == 30
    assert len(errors) == 1 and isinstance(errors[0], InsufficientFunds)


def test_concurrent_deposits_all_count():
    account = Account("finn", 0)
    run_together(*[lambda: account.deposit(5) for _ in range(8)])
    assert account.balance == 40
