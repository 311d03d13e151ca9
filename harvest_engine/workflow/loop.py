"""DeterministicLoop: an asyncio loop with a FIFO ready queue, without clock, I/O or threads.

Workflow coroutines run here so `asyncio.gather`, tasks and futures behave
identically on every replay. Anything that would make a run depend on the
outside world (timers, executors, sockets, subprocesses, the wall clock)
raises `NonDeterministicCall` naming the `ctx` method to use instead.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextvars
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import HarvestInternalError, NonDeterministicCall

if TYPE_CHECKING:
    from collections.abc import Callable

_SLEEP_INSTEAD = "ctx.sleep(duration) / ctx.timer(seconds)"
_TIMEOUT_INSTEAD = "ctx.wait_for_signal_timeout(...) or a ctx.start_timer(...) race"
_IO_INSTEAD = "an activity (ctx.execute_activity)"

# Callers allowed to read the clock while workflow code runs: the logging
# machinery stamps records, which never feeds back into workflow decisions.
_CLOCK_CALLERS_ALLOWED = ("logging", "harvest_engine.")

_get_running_loop = asyncio.events._get_running_loop
_set_running_loop = asyncio.events._set_running_loop


class _Stepping(threading.local):
    """Per thread: whether workflow code is being stepped, and the violation it made."""

    active = False
    violation: NonDeterministicCall | None = None


_stepping = _Stepping()


def _violation(call: str, instead: str) -> NonDeterministicCall:
    """Build the error and remember it, so a violation caught by user code still counts."""
    error = NonDeterministicCall(call=call, instead=instead)
    if _stepping.active:
        _stepping.violation = error
    return error


def _refuse(call: str, instead: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise _violation(call, instead)

    refuse.__name__ = call
    return refuse


class DeterministicLoop(asyncio.AbstractEventLoop):
    """Runs ready callbacks in FIFO order until none is left; never blocks."""

    def __init__(self) -> None:
        _install_guards()
        # (handle, callback, args, context): the handle for its cancel flag,
        # the rest to run it without the handle's own bookkeeping.
        self._ready: collections.deque[
            tuple[asyncio.Handle, Callable[..., Any], tuple[Any, ...], Any]
        ] = collections.deque()
        self._closed = False
        self._running = False
        self._exception: BaseException | None = None
        self._task_factory: Any = None
        self.violation: NonDeterministicCall | None = None
        # Tasks in creation order, for the call-stack view (workflow/stack.py).
        # Weak: a finished task no one holds goes away; the counter, not an
        # id(), gives the order (STYLE §5).
        self._tasks: weakref.WeakValueDictionary[int, asyncio.Task[Any]] = (
            weakref.WeakValueDictionary()
        )
        self._task_count = 0

    # -- the part workflows use ---------------------------------------------

    def call_soon(  # type: ignore[override]
        self,
        callback: Callable[..., Any],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        if context is None:
            context = contextvars.copy_context()
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append((handle, callback, args, context))
        return handle

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)

    def create_task(
        self, coro: Any, *, name: str | None = None, context: Any = None
    ) -> Any:
        if context is None:
            task = asyncio.Task(coro, loop=self, name=name)
        else:
            task = asyncio.Task(coro, loop=self, name=name, context=context)
        self._task_count += 1
        self._tasks[self._task_count] = task
        return task

    def live_tasks(self) -> list[asyncio.Task[Any]]:
        """The tasks not yet done, in the order they were created."""
        return [
            task
            for _, task in sorted(self._tasks.items(), key=lambda item: item[0])
            if not task.done()
        ]

    def run_until_quiescent(self) -> None:
        """Run callbacks until the ready queue is empty (the workflow is parked).

        The hot path of every decision: the process-wide guards are on for
        this thread while it runs (a plain try/finally, no context manager),
        and each callback runs in its context as `Handle._run` would run it.
        """
        if self._running:
            raise HarvestInternalError("DeterministicLoop re-entered")
        if not self._ready:
            return  # nothing woke (a replayed command event, say): no step
        outer = _get_running_loop()
        _set_running_loop(self)
        self._running = True
        stepping = _stepping
        previous = stepping.active
        stepping.active = True
        try:
            stepping.violation = None
            ready = self._ready
            while ready:
                handle, callback, args, context = ready.popleft()
                if handle.cancelled():
                    continue
                try:
                    context.run(callback, *args)
                except (SystemExit, KeyboardInterrupt):
                    raise
                except BaseException as exc:  # noqa: BLE001 - as Handle._run reports it
                    self.call_exception_handler(
                        {
                            "message": f"Exception in callback {callback!r}",
                            "exception": exc,
                            "handle": handle,
                        }
                    )
                if self._exception is not None:
                    error, self._exception = self._exception, None
                    raise error
            if stepping.violation is not None:
                self.violation = stepping.violation
                stepping.violation = None
        finally:
            stepping.active = previous
            self._running = False
            _set_running_loop(outer)

    def call_inside(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call `fn(*args)` now as workflow code: this loop is the running loop.

        A signal handler is called when its event is applied, which may be
        outside `run_until_quiescent` (on the host's loop, in a drive). A
        task it creates must still land here, not on the host's loop.
        """
        if self._running:
            return fn(*args)
        outer = _get_running_loop()
        _set_running_loop(self)
        self._running = True
        stepping = _stepping
        previous = stepping.active
        stepping.active = True
        try:
            stepping.violation = None
            try:
                return fn(*args)
            finally:
                if stepping.violation is not None:
                    self.violation = stepping.violation
                    stepping.violation = None
        finally:
            stepping.active = previous
            self._running = False
            _set_running_loop(outer)

    def is_running(self) -> bool:
        return self._running

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._ready.clear()
        self._closed = True

    def get_debug(self) -> bool:
        return False

    def set_debug(self, enabled: bool) -> None:
        del enabled

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        # A control-flow signal or a bug inside a callback must end the step,
        # not be logged and forgotten. Unretrieved task exceptions at garbage
        # collection are noise from torn-down instances and are ignored.
        exc = context.get("exception")
        if isinstance(
            exc, BaseException
        ) and "Task exception was never retrieved" not in str(
            context.get("message", "")
        ):
            self._exception = exc

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        self.call_exception_handler(context)

    def set_exception_handler(self, handler: Any) -> None:
        del handler

    def get_exception_handler(self) -> Any:
        return None

    def get_task_factory(self) -> Any:
        return self._task_factory

    def set_task_factory(self, factory: Any) -> None:
        self._task_factory = factory

    # -- refused: time ----------------------------------------------------

    def time(self) -> float:
        raise _violation(
            "asyncio.timeout / asyncio.wait_for / loop.time()", _TIMEOUT_INSTEAD
        )

    def call_later(  # type: ignore[override]
        self, delay: float, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        raise _violation(
            "asyncio.sleep(d > 0) / asyncio.wait_for / loop.call_later", _SLEEP_INSTEAD
        )

    def call_at(  # type: ignore[override]
        self, when: float, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        raise _violation(
            "asyncio.timeout / asyncio.wait_for / loop.call_at", _TIMEOUT_INSTEAD
        )

    # -- refused: threads and I/O -------------------------------------------

    def run_in_executor(self, executor: Any, func: Any, *args: Any) -> Any:  # type: ignore[override]
        raise _violation("loop.run_in_executor / asyncio.to_thread", _IO_INSTEAD)

    def call_soon_threadsafe(  # type: ignore[override]
        self, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        raise _violation("loop.call_soon_threadsafe", _IO_INSTEAD)

    def run_forever(self) -> None:
        raise _violation("loop.run_forever", "awaiting ctx calls")

    def run_until_complete(self, future: Any) -> Any:
        raise _violation("loop.run_until_complete", "awaiting ctx calls")

    def stop(self) -> None:
        raise _violation("loop.stop", "returning from the workflow")

    async def shutdown_asyncgens(self) -> None:
        return None

    async def shutdown_default_executor(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 -- asyncio.AbstractEventLoop's signature
        return None


_IO_METHODS = (
    "getaddrinfo",
    "getnameinfo",
    "create_connection",
    "create_server",
    "create_unix_connection",
    "create_unix_server",
    "create_datagram_endpoint",
    "connect_accepted_socket",
    "connect_read_pipe",
    "connect_write_pipe",
    "subprocess_exec",
    "subprocess_shell",
    "add_reader",
    "remove_reader",
    "add_writer",
    "remove_writer",
    "sock_recv",
    "sock_recv_into",
    "sock_recvfrom",
    "sock_recvfrom_into",
    "sock_sendall",
    "sock_sendto",
    "sock_connect",
    "sock_accept",
    "sock_sendfile",
    "sendfile",
    "start_tls",
    "add_signal_handler",
    "remove_signal_handler",
    "set_default_executor",
)
for _name in _IO_METHODS:
    setattr(DeterministicLoop, _name, _refuse(f"loop.{_name} (I/O)", _IO_INSTEAD))


def _caller_allowed() -> bool:
    frame = sys._getframe(2)
    module = frame.f_globals.get("__name__", "")
    return any(module == p or module.startswith(p) for p in _CLOCK_CALLERS_ALLOWED)


def _guarded(
    original: Callable[..., Any], call: str, instead: str
) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _stepping.active and not _caller_allowed():
            raise _violation(call, instead)
        return original(*args, **kwargs)

    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    return guarded


_ORIGINALS: dict[tuple[Any, str], Any] = {}


def _install_guards() -> None:
    """Wrap process-wide calls once; the wrappers act only in a stepping thread."""
    if _ORIGINALS:
        return
    targets: list[tuple[Any, str, str, str]] = [
        (time, "time", "time.time()", "ctx.now()"),
        (time, "time_ns", "time.time_ns()", "ctx.now()"),
        (time, "monotonic", "time.monotonic()", "ctx.now()"),
        (time, "perf_counter", "time.perf_counter()", "ctx.now()"),
        (time, "sleep", "time.sleep()", _SLEEP_INSTEAD),
        (threading.Thread, "start", "threading.Thread.start()", _IO_INSTEAD),
        (builtins, "open", "open() (file I/O)", _IO_INSTEAD),
        (builtins, "input", "input() (console I/O)", "ctx.wait_for_signal(name)"),
    ]
    for owner, attr, call, instead in targets:
        original = getattr(owner, attr)
        _ORIGINALS[(owner, attr)] = original
        setattr(owner, attr, _guarded(original, call, instead))
