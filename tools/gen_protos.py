"""Generate Python code and mypy stubs for every .proto under protos/ into gen/.

Run by `make protos`; the output is never edited by hand and never committed.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTOS = ROOT / "protos"
GEN = ROOT / "gen"


def main() -> int:
    files = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
    if GEN.exists():
        shutil.rmtree(GEN)
    GEN.mkdir()
    # The descriptor set WITH source info (the protos' comments) that server reflection
    # serves (electric_platform.reflection), next to the generated package.
    (GEN / "electric").mkdir()
    descriptor_set = GEN / "electric" / "descriptor_set.pb"
    well_known = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTOS}",
        f"-I{well_known}",
        f"--python_out={GEN}",
        f"--grpc_python_out={GEN}",
        # ``quiet``: no "Writing mypy to ..." line per file (errors still go to stderr).
        f"--mypy_out=quiet:{GEN}",
        f"--mypy_grpc_out=quiet:{GEN}",
        f"--descriptor_set_out={descriptor_set}",
        "--include_source_info",
        "--include_imports",
        *files,
    ]
    # The mypy-protobuf plugins are console scripts next to this interpreter.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    rc = protoc.main(args)
    if rc != 0:
        print(f"protoc failed with exit code {rc}", file=sys.stderr)
        return int(rc)
    # Regular packages (with __init__.py and py.typed) so editable installs and mypy see them.
    for d in [GEN / "electric", *(p for p in (GEN / "electric").rglob("*") if p.is_dir())]:
        (d / "__init__.py").touch()
        (d / "py.typed").touch()
    print(f"generated {len(files)} proto files into {GEN.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
