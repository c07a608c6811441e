"""Checks of the arguments that are durations in seconds: a number (``int`` or
``float``, never ``bool`` or ``str``), and a warning for a lease or a timeout
over a day, the mark of milliseconds passed as seconds. Ranges are the core's
(:class:`InvalidArgumentError`)."""

from __future__ import annotations

import math
import numbers
import threading

from ._holds import logger

_DAY = 24 * 3600.0

_warned: set[str] = set()
_warned_mutex = threading.Lock()


def check_number(value: object, what: str) -> None:
    """TypeError naming ``what`` unless ``value`` is a real number (``bool`` is not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        shown = repr(value)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        raise TypeError(f"{what} must be a number of seconds (int or float), not {type(value).__name__} {shown}")


def check_seconds(value: object, what: str, *, warn_long: bool = False) -> None:
    """Checks a duration in seconds (None passes: the default). With ``warn_long``,
    a value over a day is logged as a warning, once per argument name."""
    if value is None:
        return
    check_number(value, what)
    seconds = float(value)  # type: ignore[arg-type]
    if warn_long and math.isfinite(seconds) and seconds > _DAY:
        with _warned_mutex:
            first = what not in _warned
            _warned.add(what)
        if first:
            logger.warning(
                "%s=%s s is more than a day (%.1f days): were milliseconds passed as seconds? "
                "ferrolock durations are in seconds (this warning is logged once)",
                what,
                value,
                seconds / _DAY,
            )


_I64_MAX = 2**63 - 1


def check_count(value: object, what: str) -> int:
    """A count of permits or a latch's count: an ``int`` (never ``bool``), else
    TypeError naming ``what``; negative or beyond the server's integers,
    :class:`InvalidArgumentError`. The smallest allowed value is the core's to
    check (0 permits may be set, not taken)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int, not {type(value).__name__} {value!r:.40}")
    count = int(value)
    if count < 0 or count > _I64_MAX:
        from ._errors import InvalidArgumentError

        raise InvalidArgumentError(f"{what} = {count} is out of range; give 0 to {_I64_MAX}")
    return count
