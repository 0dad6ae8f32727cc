"""Hooks: how a lower layer lets a higher one react without importing it.

The layers of docs/architecture.md run one way: a lower app never imports a higher one.
Where it must still reach one (a final decision asks for a report; a finished profile asks
for the variables' roles), it offers a ``Hook``, sends it at that point, and the higher app
subscribes to it in its ``AppConfig.ready()``.

``Hook`` — any number of subscribers, called in the order they subscribed, with the sender's
keyword arguments; an exception in one propagates to the sender (the subscribers run inside
its transaction, so their work stands or falls with it).

``Provided`` — exactly one function a higher app provides (the audit trail's writer, the
approved release's opener); calling it before one is provided is a configuration error.

Both are declared by decorating a function that has the signature and says what it is for;
its body is never run:

    @Hook.declare
    def decision_final(*, decision: ReviewDecision, user: User | None) -> None:
        "Sent once a final decision is recorded, inside its transaction."
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

from django.core.exceptions import ImproperlyConfigured

P = ParamSpec("P")
R = TypeVar("R")


class Hook(Generic[P]):
    """A point a lower layer announces, for the higher layers subscribed to it."""

    def __init__(self, name: str, doc: str | None = None) -> None:
        self.name = name
        self.__doc__ = doc
        self._subscribers: list[Callable[P, object]] = []

    @classmethod
    def declare(cls, signature: Callable[P, object]) -> Hook[P]:
        return cls(f"{signature.__module__}.{signature.__name__}", signature.__doc__)

    def subscribe(self, subscriber: Callable[P, object]) -> None:
        """Called from ``AppConfig.ready()``; subscribing twice is subscribing once."""
        if subscriber not in self._subscribers:
            self._subscribers.append(subscriber)

    @property
    def subscribers(self) -> tuple[Callable[P, object], ...]:
        return tuple(self._subscribers)

    def send(self, *args: P.args, **kwargs: P.kwargs) -> None:
        for subscriber in self._subscribers:
            subscriber(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Hook({self.name!r}, {len(self._subscribers)} subscriber(s))"


class Provided(Generic[P, R]):
    """One function that a higher layer provides and a lower one calls."""

    def __init__(self, name: str, doc: str | None = None) -> None:
        self.name = name
        self.__doc__ = doc
        self._function: Callable[P, R] | None = None

    @classmethod
    def declare(cls, signature: Callable[P, R]) -> Provided[P, R]:
        return cls(f"{signature.__module__}.{signature.__name__}", signature.__doc__)

    def provide(self, function: Callable[P, R]) -> None:
        """Called from ``AppConfig.ready()`` of the app that owns the function."""
        self._function = function

    @property
    def function(self) -> Callable[P, R] | None:
        return self._function

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if self._function is None:
            raise ImproperlyConfigured(f"Nothing provides {self.name}: is its app installed?")
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Provided({self.name!r})"
