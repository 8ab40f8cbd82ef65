class Account:
    def __init__(self, overdraft=0):
        pass

    def open(self):
        pass

    def close(self):
        pass

    def deposit(self, cents):
        pass

    def withdraw(self, cents):
        pass

    def balance(self):
        pass

    def history(self):
        pass
