"""One error path for users: every command's failure ends in one line on stderr.

``drivesim: error: <what, naming the file / field / value>`` and exit status 2 for a usage
error (a bad option, config value, policy file, sweep, SQL) or 1 for a failure (damaged or
missing data, a busy directory, a full disk, a batch that failed to run). ``--debug`` or
``DRIVESIM_DEBUG=1`` prints the traceback as well.
"""

from __future__ import annotations

import os
import sys
import traceback

import typer

try:  # typer >= 0.20 carries its own copy of click
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer on click
    from click.exceptions import ClickException, UsageError  # type: ignore[no-redef,assignment,unused-ignore]

USAGE_EXIT = 2
FAILURE_EXIT = 1


class CampaignFailed(RuntimeError):
    """A campaign ran but some batch failed to run, or nothing was computed (exit 1)."""


def debug_enabled() -> bool:
    return os.environ.get("DRIVESIM_DEBUG", "") not in ("", "0") or "--debug" in sys.argv[1:]


def _usage_types() -> tuple[type, ...]:
    from drivesim.pipeline.fingerprint import InputChangedError
    from drivesim.pipeline.validation import ConfigError
    from drivesim.train.policy_io import PolicyFileError

    types: list[type] = [UsageError, ConfigError, InputChangedError, PolicyFileError]
    try:
        import duckdb

        types += [duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException]
    except ImportError:  # pragma: no cover - duckdb is a dependency
        pass
    return tuple(types)


def one_line(exc: BaseException) -> str:
    """A one-line description of ``exc`` naming what it names (file, field, value)."""
    if isinstance(exc, ClickException):
        message = exc.format_message()
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            message += f" (see: {ctx.command_path} --help)"
        return message
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    text = " ".join(lines[:2]) if lines else ""
    known = isinstance(exc, _usage_types() + (CampaignFailed, ValueError, LookupError, RuntimeError, OSError))
    if not text or not known:
        name = type(exc).__name__
        text = f"{name}: {text}" if text else name
        if not debug_enabled():
            text += " (run with --debug for the traceback)"
    return text


def exit_code(exc: BaseException) -> int:
    return USAGE_EXIT if isinstance(exc, _usage_types()) else FAILURE_EXIT


def run_app(app) -> None:
    """Run the typer ``app``; map every exception to one line and an exit status."""
    try:
        result = app(standalone_mode=False)
    except KeyboardInterrupt as stop:  # Ctrl-C (130) or SIGTERM (143, drivesim.pipeline.interrupt)
        from drivesim.pipeline.interrupt import exit_status, signal_name

        print(f"drivesim: interrupted by {signal_name(stop)}", file=sys.stderr)
        sys.exit(exit_status(stop))
    except typer.Abort:
        print("drivesim: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare "drivesim" or a group: the help
            exc.show()
            sys.exit(USAGE_EXIT)
        print(f"drivesim: error: {one_line(exc)}", file=sys.stderr)
        sys.exit(USAGE_EXIT)
    except Exception as exc:  # noqa: BLE001 - the one place user-facing errors end
        if debug_enabled():
            traceback.print_exc()
        print(f"drivesim: error: {one_line(exc)}", file=sys.stderr)
        sys.exit(exit_code(exc))
    sys.exit(result if isinstance(result, int) else 0)
