import pytest

from ledger_account import Account


@pytest.fixture
def account():
    acct = Account()
    acct.open()
    return acct


def test_new_open_account_is_empty(account):
    assert account.balance() == 0
    assert account.history() == []


def test_deposit_and_withdraw(account):
    account.deposit(500)
    account.withdraw(120)
    assert account.balance() == 380
    assert account.history() == [("deposit", 500), ("withdraw", 120)]


def test_cannot_withdraw_more_than_balance(account):
    account.deposit(100)
    with pytest.raises(ValueError):
        account.withdraw(101)
    assert account.balance() == 100
    assert account.history() == [("deposit", 100)]


def test_overdraft_allows_negative_balance():
    acct = Account(overdraft=50)
    acct.open()
    acct.withdraw(50)
    assert acct.balance() == -50
    with pytest.raises(ValueError):
        acct.withdraw(1)


@pytest.mark.parametrize("amount", [0, -5])
def test_amount_must_be_positive(account, amount):
    with pytest.raises(ValueError):
        account.deposit(amount)
    with pytest.raises(ValueError):
        account.withdraw(amount)


def test_new_account_is_closed():
    acct = Account()
    with pytest.raises(ValueError):
        acct.balance()
    with pytest.raises(ValueError):
        acct.deposit(10)


def test_cannot_open_twice(account):
    with pytest.raises(ValueError):
        account.open()


def test_cannot_close_twice(account):
    account.close()
    with pytest.raises(ValueError):
        account.close()


def test_closed_account_refuses_operations(account):
    account.deposit(10)
    account.close()
    for call in (account.balance, account.history, lambda: account.withdraw(1)):
        with pytest.raises(ValueError):
            call()


def test_reopened_account_starts_empty(account):
    account.deposit(900)
    account.close()
    account.open()
    assert account.balance() == 0
    assert account.history() == []
