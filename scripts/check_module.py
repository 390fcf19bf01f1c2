#!/usr/bin/env python3
"""Checks what a release tarball promises of the module in it, before scripts/dist.sh writes it:

    check_module.py --arch x86_64|aarch64 --glibc 2.17 path/to/libredis_bf.so

the module is an ELF shared object for that architecture, stripped (no .symtab, no .debug_*
section), exports RedisModule_OnLoad, links to nothing but the C library's own libraries, and needs
no glibc symbol version newer than --glibc. Prints nothing when all holds; otherwise says what does
not, on stderr, and exits 1. Reads the ELF file with pyelftools (in target/tools/venv, installed by
scripts/zig-tools.sh), so that no binutils are needed.
"""

from __future__ import annotations

import argparse
import sys

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

# e_machine of each architecture the tarballs are built for.
MACHINES = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}
# Libraries the module may link to: the C library's own, which every glibc system has.
ALLOWED_NEEDED = {
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}


def numbers(version: str) -> tuple[int, ...]:
    """A dotted version as numbers, for comparing."""
    return tuple(int(part) for part in version.split("."))


def problems(elf: ELFFile, arch: str, glibc: str) -> list[str]:
    """What does not hold of the module, one line each."""
    found = []
    if elf["e_type"] != "ET_DYN" or elf["e_machine"] != MACHINES[arch]:
        found.append(
            f"is not an {arch} shared object (e_type {elf['e_type']}, e_machine {elf['e_machine']})"
        )
    sections = [section.name for section in elf.iter_sections()]
    unstripped = [name for name in sections if name == ".symtab" or name.startswith(".debug_")]
    if unstripped:
        found.append(f"is not stripped: it has {', '.join(unstripped)}")

    dynsym = elf.get_section_by_name(".dynsym")
    exported = {
        symbol.name
        for symbol in (dynsym.iter_symbols() if dynsym else [])
        if symbol["st_shndx"] != "SHN_UNDEF" and symbol["st_info"]["bind"] == "STB_GLOBAL"
    }
    if "RedisModule_OnLoad" not in exported:
        found.append("does not export RedisModule_OnLoad")

    needed = [
        tag.needed
        for section in elf.iter_sections()
        if isinstance(section, DynamicSection)
        for tag in section.iter_tags()
        if tag.entry.d_tag == "DT_NEEDED"
    ]
    for library in needed:
        if library not in ALLOWED_NEEDED:
            found.append(f"needs {library}, which a bare glibc system may not have")

    versions = [
        aux.name[len("GLIBC_") :]
        for section in elf.iter_sections()
        if isinstance(section, GNUVerNeedSection)
        for _, auxes in section.iter_versions()
        for aux in auxes
        if aux.name.startswith("GLIBC_") and aux.name[len("GLIBC_") :][:1].isdigit()
    ]
    if not versions:
        found.append("has no GLIBC_ symbol versions")
    elif numbers(newest := max(versions, key=numbers)) > numbers(glibc):
        found.append(f"needs glibc {newest}, newer than {glibc}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", required=True, choices=sorted(MACHINES))
    parser.add_argument(
        "--glibc", required=True, help="the newest glibc the module may need, e.g. 2.17"
    )
    parser.add_argument("module")
    args = parser.parse_args()
    with open(args.module, "rb") as file:
        found = problems(ELFFile(file), args.arch, args.glibc)
    for problem in found:
        print(f"{args.module} {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
