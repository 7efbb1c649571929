"""A class with many small methods, called in loops."""


class Account:
    def __init__(self):
        self.balance = 0
        self.history = []

    def deposit(self, amount):
        self.balance += amount
        self.record("deposit", amount)

    def withdraw(self, amount):
        if self.can_withdraw(amount):
            self.balance -= amount
            self.record("withdraw", amount)

    def can_withdraw(self, amount):
        return amount <= self.balance

    def record(self, kind, amount):
        self.history.append((kind, amount))

    def deposits(self):
        return [a for k, a in self.history if k == "deposit"]

    def withdrawals(self):
        return [a for k, a in self.history if k == "withdraw"]

    def total_in(self):
        return sum(self.deposits())

    def total_out(self):
        return sum(self.withdrawals())

    def check(self):
        return self.total_in() - self.total_out() == self.balance

    def reset(self):
        self.__init__()


def main():
    acct = Account()
    for i in range(40):
        acct.deposit(i)
        acct.withdraw(i // 2)
        if i % 10 == 0:
            acct.check()
    for _ in range(3):
        acct.total_in()
        acct.total_out()
    acct.reset()
