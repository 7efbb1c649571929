"""A small program to profile: python -m rprofile -s tottime examples/fib.py"""

import json


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def fib_memo(n, memo={}):
    if n not in memo:
        memo[n] = n if n < 2 else fib_memo(n - 1) + fib_memo(n - 2)
    return memo[n]


def main():
    results = {n: fib(n) for n in range(20)}
    results.update({n: fib_memo(n) for n in range(20, 200)})
    text = json.dumps({str(k): v for k, v in results.items()})
    return len(json.loads(text))


if __name__ == "__main__":
    print(main(), "numbers")
