"""The ``wowgrass`` program (``python -m wowgrass`` and the installed script).

Ctrl-C at any moment ends it with ``interrupted`` on stderr and exit status 130, never a traceback.
From this module's first line until a command runs (importing it, click's set-up) SIGINT ends the
process at once (the package's __init__ imports nothing, so this line comes a moment after the
script starts; before it, the signal is Python's start-up's); while the command runs it is a
KeyboardInterrupt that the command line turns into the same line (cli/main.py: clean-ups still
run; one that comes as the command returns, past that handling, ends here the same way); after
it, while the interpreter's exit handlers run (joining worker pools), it ends the process at once
again. One that comes later still, with nothing left to run but the interpreter's teardown, is
ignored: the exit status is the command's.
Only the program imports this module.
"""

import _signal   # the C module, loaded with the interpreter (signal.py imports enum: too slow here)
import os


def stop_now(signum=_signal.SIGINT, frame=None):
    """SIGINT where no command is running: the one line, exit 128 + the signal, nothing else."""
    try:
        os.write(2, b"interrupted\n")
    except OSError:
        pass
    os._exit(128 + signum)


stop_now.wowgrass_program = True   # cli/main.py: the program's handler, replaced while a command runs
try:
    _signal.signal(_signal.SIGINT, stop_now)
except KeyboardInterrupt:   # one that came during the imports: signal() runs the old handler first
    stop_now()


def _ignore_from_here():
    # the last exit handler: what is left is the interpreter's own teardown, which would put SIGINT
    # back to its default (killed, no word) for any handler but "ignore"
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)


def main(argv=None):
    import atexit

    _signal.signal(_signal.SIGINT, stop_now)
    atexit.register(_ignore_from_here)   # registered first: runs after every other exit handler
    from wowgrass.cli.main import main as run

    try:
        run(argv)
    except KeyboardInterrupt:   # one that came as the command returned, past its own handling
        stop_now()
    finally:   # the exit handlers (joining worker pools, flushing) end as the start-up does
        try:
            _signal.signal(_signal.SIGINT, stop_now)
        except KeyboardInterrupt:   # one pending: signal() runs the command's handler first
            stop_now()


if __name__ == "__main__":
    main()
