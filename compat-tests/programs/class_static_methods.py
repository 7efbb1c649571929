"""classmethod, staticmethod and super() through a small class hierarchy."""


class Shape:
    count = 0

    def __init__(self, size):
        self.size = size
        Shape.bump()

    @classmethod
    def bump(cls):
        cls.count += 1

    @classmethod
    def unit(cls):
        return cls(1)

    @staticmethod
    def double(x):
        return 2 * x

    def area(self):
        return self.size * self.size


class Square(Shape):
    def __init__(self, size):
        super().__init__(size)

    def area(self):
        return self.double(super().area())


def main():
    Shape.unit()
    Square.unit()
    s = Square(3)
    s.area()
    Shape.double(4)
    s.double(5)
    type(s).unit().area()
