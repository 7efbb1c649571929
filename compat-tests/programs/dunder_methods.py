"""A container class whose dunder methods are called by syntax and by builtins."""


class Bag:
    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __setitem__(self, i, value):
        self.items[i] = value

    def __contains__(self, item):
        return item in self.items

    def __eq__(self, other):
        return isinstance(other, Bag) and self.items == other.items

    def __hash__(self):
        return len(self.items)

    def __lt__(self, other):
        return len(self) < len(other)

    def __add__(self, other):
        return Bag(self.items + other.items)

    def __bool__(self):
        return bool(self.items)

    def __repr__(self):
        return "Bag(%r)" % (self.items,)

    def __call__(self, x):
        return x in self


def main():
    a = Bag([1, 2, 3])
    b = Bag([4, 5])
    len(a)
    list(a)
    a[0]
    a[1] = 9
    3 in a
    a == b
    a != Bag([1, 9, 3])
    c = a + b
    sorted([c, a, b])
    {a, b, Bag([4, 5])}
    repr(c)
    if a and not Bag([]):
        pass
    a(9)
