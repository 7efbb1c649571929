"""Properties (getter, setter, deleter), cached_property and __getattr__."""

import functools


class Temperature:
    def __init__(self, celsius):
        self._celsius = celsius

    @property
    def celsius(self):
        return self._celsius

    @celsius.setter
    def celsius(self, value):
        self._celsius = value

    @celsius.deleter
    def celsius(self):
        self._celsius = 0

    @property
    def fahrenheit(self):
        return self.celsius * 9 / 5 + 32

    @functools.cached_property
    def description(self):
        return "%.1f F" % self.fahrenheit

    def __getattr__(self, name):
        return name.upper()


def main():
    t = Temperature(20)
    for _ in range(3):
        t.fahrenheit
    t.celsius = 25
    del t.celsius
    t.description
    t.description
    t.anything_else
