"""Name -> class registries for tasks and models.

Entries register themselves with a decorator and are imported explicitly by their
package's ``__init__`` (no dotted import strings that can go stale). Each entry
carries its pydantic config class, which is what ``RunConfig`` validates against.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised for a name that is not registered; the message lists the valid ones."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    cls: T
    config_cls: Any
    doc: str


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def register(self, name: str, config: Any) -> Callable[[T], T]:
        """Class decorator: ``@TASKS.register("copy", config=CopyConfig)``."""

        def deco(cls: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            fields = getattr(config, "model_fields", {})
            if "name" not in fields or fields["name"].default != name:
                raise ValueError(
                    f"{self.kind} {name!r}: its config class must declare name: Literal[{name!r}] = {name!r}"
                )
            doc = (cls.__doc__ or "").strip().splitlines()
            self._entries[name] = Entry(name, cls, config, doc[0] if doc else "")
            return cls

        return deco

    def get(self, name: str) -> Entry[T]:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; choose from {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        return list(self._entries)

    def configs(self) -> list[Any]:
        return [e.config_cls for e in self._entries.values()]

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self._entries.values())

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)


TASKS: Registry[Any] = Registry("task")
MODELS: Registry[Any] = Registry("model")
