#!/usr/bin/env python3
"""The product's include graph against the rooms table of docs/architecture.md, and its link graph against the
port's rule.

Every `#include "..."` in the product's sources (aisrv/, phy/, engine/, flash/, protocol/, host/ and
tools/completion/; tests and the other tools aside) is resolved to the file it names: first beside the including file
and in its folders upwards, then under every `include/` folder of the product, then as the one file of the product
whose path ends with the name. Both ends are mapped to their room by the table under "## Rooms" in
docs/architecture.md (the longest matching directory or file wins), and an arrow between two rooms that the table's
"may include" column does not allow is reported with its file and line. An include that resolves to no file of the
product must be a generated header the table names in its "generated" column, or it is reported too.

The link graph: every target_link_libraries() of the product's CMakeLists.txt files (the SOURCE_ROOTS and cmake/)
gives arrows target -> library; a transport library (aisrv_phy_*) must not reach aisrv_interpreter through them,
directly or through another library: transports link the port (aisrv_port) only, the daemon links both. Each such
path is reported with its arrows.

Usage: check_include_graph.py [ROOT]   (ROOT: the source tree, default: two levels above this script)
       check_include_graph.py --self-test   (a small tree with one allowed and one forbidden include arrow, then a
                                             transport that links the interpreter through another library: the
                                             checker must pass the first and report the others)
Exit 0 when every arrow is allowed, 1 with one line per forbidden arrow or link path otherwise, 2 when the table is
missing.
"""
import os
import re
import sys

SOURCE_ROOTS = ("aisrv", "phy", "engine", "flash", "protocol", "host", "tools/completion")
EXTENSIONS = (".h", ".hpp", ".c", ".cc", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
LINK = re.compile(r"target_link_libraries\s*\(\s*([\w:.-]+)(.*?)\)", re.S)
LINK_KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "LINK_PUBLIC", "LINK_PRIVATE"}
# (targets starting with, library they must not reach): transports reach the interpreter through the port alone.
LINK_RULES = (("aisrv_phy_", "aisrv_interpreter"),)


def usage():
    print(__doc__.strip())


def read_rooms(root):
    """The rooms table: [(room, [paths], {allowed rooms}, [generated include names])]."""
    path = os.path.join(root, "docs", "architecture.md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "## Rooms")
    except StopIteration:
        return None
    rooms = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        ticks = lambda cell: re.findall(r"`([^`]+)`", cell)
        name = ticks(cells[0])[0]
        paths = [p.rstrip("/") for p in ticks(cells[1])]
        allowed = set(ticks(cells[2]))
        generated = ticks(cells[3]) if len(cells) > 3 else []
        rooms.append((name, paths, allowed, generated))
    return rooms


def room_of(rel, rooms):
    best, best_len = None, -1
    for name, paths, _, _ in rooms:
        for p in paths:
            if (rel == p or rel.startswith(p + "/")) and len(p) > best_len:
                best, best_len = name, len(p)
    return best


def product_files(root):
    out = []
    for top in SOURCE_ROOTS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x not in ("python",)]  # the Python client has no C includes
            for f in files:
                if f.endswith(EXTENSIONS):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def link_graph(root):
    """{target: {library: "file:line"}} from every target_link_libraries() of the product's CMakeLists.txt files."""
    graph = {}
    for top in SOURCE_ROOTS + ("cmake",):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f != "CMakeLists.txt" and not f.endswith(".cmake"):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = re.sub(r"#[^\n]*", "", fh.read())  # comments out, line numbers kept
                for m in LINK.finditer(text):
                    where = f"{os.path.relpath(path, root)}:{text.count(chr(10), 0, m.start()) + 1}"
                    libs = graph.setdefault(m.group(1), {})
                    for lib in m.group(2).split():
                        if lib not in LINK_KEYWORDS and not lib.startswith("$<"):
                            libs.setdefault(lib, where)
    return graph


def check_links(root):
    """Lines naming every path by which a target of LINK_RULES reaches a library it must not."""
    graph = link_graph(root)
    problems = []
    for prefix, forbidden in LINK_RULES:
        for target in sorted(t for t in graph if t.startswith(prefix)):
            todo, via = [target], {target: None}
            while todo:  # breadth first: the shortest path is the one reported
                t = todo.pop(0)
                for lib in graph.get(t, {}):
                    if lib not in via:
                        via[lib] = t
                        todo.append(lib)
            if forbidden in via:
                path, t = [], forbidden
                while via[t] is not None:
                    path.append(f"{via[t]} -> {t} ({graph[via[t]][t]})")
                    t = via[t]
                problems.append(f"link: {target} reaches {forbidden}: {'; '.join(reversed(path))} (transports link "
                                f"aisrv_port, never the interpreter: docs/architecture.md)")
    return problems, sum(len(v) for v in graph.values())


def self_test():
    import contextlib
    import io
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        write("docs/architecture.md", "## Rooms\n\n| room | directories | may include | generated |\n|---|---|---|---|\n"
              "| `protocol` | `protocol/` | | |\n| `port` | `aisrv/include/aisrv/port.hpp` | `protocol` | |\n"
              "| `interpreter` | `aisrv/include/` `aisrv/src/` | `port` `protocol` | |\n"
              "| `phy` | `phy/` | `port` `protocol` | |\n\n## Next\n")
        write("protocol/include/aisrv/protocol/p.hpp", "")
        write("aisrv/include/aisrv/port.hpp", '#include "aisrv/protocol/p.hpp"\n')
        write("aisrv/include/aisrv/server.hpp", '#include "aisrv/port.hpp"\n')
        write("phy/x/src/good.cpp", '#include "aisrv/port.hpp"\n')
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            clean = main(["", root])
        write("phy/x/src/bad.cpp", '#include "aisrv/server.hpp"\n')
        out2 = io.StringIO()
        with contextlib.redirect_stdout(out2):
            dirty = main(["", root])
        os.remove(os.path.join(root, "phy/x/src/bad.cpp"))
        write("aisrv/CMakeLists.txt", "add_library(aisrv_port STATIC port.cpp)\n"
              "target_link_libraries(aisrv_port PUBLIC aisrv_protocol)\n"
              "target_link_libraries(aisrv_interpreter PUBLIC aisrv_port # the port\n  Threads::Threads)\n"
              "target_link_libraries(aisrv_daemon PUBLIC aisrv_interpreter aisrv_phy_x)\n")
        write("phy/CMakeLists.txt", "target_link_libraries(aisrv_phy_x PUBLIC aisrv_port)\n")
        out3 = io.StringIO()
        with contextlib.redirect_stdout(out3):
            linked = main(["", root])
        write("phy/CMakeLists.txt", "target_link_libraries(aisrv_phy_x PUBLIC aisrv_port\n"
              "  PRIVATE aisrv_helper)\ntarget_link_libraries(aisrv_helper PRIVATE aisrv_interpreter)\n")
        out4 = io.StringIO()
        with contextlib.redirect_stdout(out4):
            badlink = main(["", root])
        ok = clean == 0 and dirty == 1 and "phy/x/src/bad.cpp:1: phy -> interpreter" in out2.getvalue()
        ok = ok and linked == 0 and badlink == 1 and (
            "link: aisrv_phy_x reaches aisrv_interpreter: aisrv_phy_x -> aisrv_helper (phy/CMakeLists.txt:1); "
            "aisrv_helper -> aisrv_interpreter (phy/CMakeLists.txt:3)" in out4.getvalue())
        print(f"check_include_graph --self-test: allowed tree {clean} (want 0), forbidden arrow {dirty} (want 1), "
              f"port-only links {linked} (want 0), a transport linking the interpreter {badlink} (want 1): "
              f"{'ok' if ok else 'FAILED'}")
        if not ok:
            print(out.getvalue() + out2.getvalue() + out3.getvalue() + out4.getvalue())
        return 0 if ok else 1


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        usage()
        return 0
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    rooms = read_rooms(root)
    if not rooms:
        print("check_include_graph: docs/architecture.md has no '## Rooms' table", file=sys.stderr)
        return 2
    allowed = {name: a for name, _, a, _ in rooms}
    unknown = sorted({a for a_set in allowed.values() for a in a_set} - set(allowed))
    if unknown:
        print(f"check_include_graph: the table allows rooms it does not define: {', '.join(unknown)}", file=sys.stderr)
        return 2
    # The table itself must be a layering: no room may reach itself through the arrows it allows.
    def reaches(start):
        seen, todo = set(), list(allowed[start])
        while todo:
            r = todo.pop()
            if r not in seen:
                seen.add(r)
                todo.extend(allowed[r])
        return seen
    cyclic = [r for r in allowed if r in reaches(r)]
    if cyclic:
        print(f"check_include_graph: the rooms table has a cycle through {', '.join(cyclic)}", file=sys.stderr)
        return 2
    generated = {g for _, _, _, gs in rooms for g in gs}
    files = product_files(root)
    exported = {}  # "aisrv/server.hpp" -> "aisrv/include/aisrv/server.hpp"
    for f in files:
        parts = f.split("/")
        if "include" in parts:
            i = parts.index("include")
            exported.setdefault("/".join(parts[i + 1:]), f)
    problems = []
    arrows = 0
    for f in files:
        src_room = room_of(f, rooms)
        if src_room is None:
            problems.append(f"{f}: in no room of the table")
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                target = None
                d = os.path.dirname(f)
                while d and target is None:  # beside the file, then its folders upwards (private src/ headers)
                    cand = os.path.normpath(os.path.join(d, name))
                    if os.path.isfile(os.path.join(root, cand)):
                        target = cand
                    d = os.path.dirname(d)
                if target is not None:
                    pass
                elif name in exported:
                    target = exported[name]
                elif name in generated or os.path.basename(name) in generated:
                    continue
                elif len(by_suffix := [x for x in files if x.endswith("/" + name)]) == 1:
                    target = by_suffix[0]  # reached through a private include directory of another target
                else:
                    problems.append(f"{f}:{n}: #include \"{name}\" names no file of the product")
                    continue
                dst_room = room_of(target, rooms)
                if dst_room is None:
                    problems.append(f"{f}:{n}: #include \"{name}\" ({target}) is in no room of the table")
                    continue
                if dst_room == src_room:
                    continue
                arrows += 1
                if dst_room not in allowed[src_room]:
                    problems.append(f"{f}:{n}: {src_room} -> {dst_room} (#include \"{name}\", {target}) is not "
                                    f"allowed by docs/architecture.md (## Rooms: {src_room} may include "
                                    f"{', '.join(sorted(allowed[src_room])) or 'nothing'})")
    link_problems, links = check_links(root)
    problems += link_problems
    for p in problems:
        print(p)
    print(f"check_include_graph: {len(files)} files, {arrows} arrows between rooms, {links} link arrows, "
          f"{len(problems)} not allowed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
