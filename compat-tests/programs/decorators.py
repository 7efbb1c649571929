"""Decorators: plain wrappers, decorators with arguments, stacking, methods and classes."""

import functools


def traced(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def repeat(times):
    def decorate(func):
        def wrapper(*args):
            result = None
            for _ in range(times):
                result = func(*args)
            return result

        return wrapper

    return decorate


def register(cls):
    cls.registered = True
    return cls


@traced
def add(a, b):
    return a + b


@repeat(3)
@traced
def shout(word):
    return word.upper()


@register
class Greeter:
    @traced
    def greet(self, name):
        return "hello " + name


def main():
    add(1, 2)
    add(a=3, b=4)
    shout("hey")
    Greeter().greet("you")
