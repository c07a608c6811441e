"""``with`` and ``async with`` for clients and lock objects: entering runs a hook
and gives the object itself, leaving runs another hook (close, release)."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self


class _Scoped:
    """``with x:`` runs ``x._enter()`` and gives ``x``; leaving runs ``x._exit()``."""

    def _enter(self) -> None:
        """What entering does (nothing unless overridden)."""

    def _exit(self) -> None:
        """What leaving does."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._enter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._exit()


class _AsyncScoped:
    """``async with x:`` awaits ``x._aenter()`` and gives ``x``; leaving awaits ``x._aexit()``."""

    async def _aenter(self) -> None:
        """What entering does (nothing unless overridden)."""

    async def _aexit(self) -> None:
        """What leaving does."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self._aenter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._aexit()
