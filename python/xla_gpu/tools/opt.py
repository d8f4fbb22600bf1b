"""`xla-gpu-opt` for an installed package: runs the C++ driver built beside
the plugin library (tools/xla-gpu-opt), with the same arguments."""

import os
import sys

from xla_gpu._capi import OPT_PATH


def main() -> None:
    if not OPT_PATH.exists():
        sys.stderr.write(f"xla-gpu-opt: {OPT_PATH} is missing; build the project\n")
        sys.exit(1)
    os.execv(OPT_PATH, [str(OPT_PATH), *sys.argv[1:]])


if __name__ == "__main__":
    main()
