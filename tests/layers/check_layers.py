#!/usr/bin/env python3
"""check_layers.py SOURCE_DIR [BUILD_DIR] - the analyzer's stages keep to
their map (src/analyze/README.md, the `layers` and `interfaces` blocks).

Fails, naming file, line and rule, when:
  - a file of stage S includes a header of a stage S may not use, or a
    header of another stage that is not that stage's interface;
  - the library's other layers (src/core, config, probe, sink), the Python
    extension or the examples include the analyzer; the CLI includes a
    stage's private header;
  - the map itself has a cycle;
  - with BUILD_DIR: an object of stage S calls a function defined in a
    stage S may not use, or two files of src/analyze or src/config call
    each other (a file circle). Read from the objects with `nm`, so a
    declaration written by hand instead of an include is caught too.
"""
import collections
import glob
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_map(readme):
    text = open(readme, encoding="utf-8").read()
    blocks = {}
    for name in ("layers", "interfaces"):
        m = re.search(r"```" + name + r"\n(.*?)```", text, re.S)
        if not m:
            sys.exit(f"{readme}: no ```{name} block")
        rows = {}
        for line in m.group(1).splitlines():
            if not line.strip():
                continue
            stage, _, rest = line.partition(":")
            rows[stage.strip()] = rest.split()
        blocks[name] = rows
    return blocks["layers"], {s: v[0] for s, v in blocks["interfaces"].items()}


def cycle_in(layers):
    state = {}

    def visit(s, path):
        if state.get(s) == 1:
            return path[path.index(s):] + [s]
        if state.get(s) == 2:
            return None
        state[s] = 1
        for t in layers.get(s, []):
            c = visit(t, path + [s])
            if c:
                return c
        state[s] = 2
        return None

    for s in layers:
        c = visit(s, [])
        if c:
            return c
    return None


def source_files(root, *dirs):
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(root, d, "**", "*.[ch]"), recursive=True)):
            yield path


def check_includes(root, layers, interfaces):
    errors = []
    stage_of = lambda rel: rel.split("/")[2] if rel.startswith("src/analyze/") and rel.count("/") >= 3 else None
    for path in source_files(root, "src", "tools", "python", "examples"):
        rel = os.path.relpath(path, root)
        stage = stage_of(rel)
        for no, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m or not m.group(1).startswith("analyze/"):
                continue
            inc = m.group(1)
            parts = inc.split("/")
            if len(parts) != 3:
                errors.append(f"{rel}:{no}: {inc}: an analyzer include names its stage folder")
                continue
            target, header = parts[1], parts[2]
            where = f"{rel}:{no}: includes {inc}"
            if target not in layers:
                errors.append(f"{where}: no stage '{target}' in src/analyze/README.md")
            elif stage is not None:
                if target != stage and target not in layers[stage]:
                    errors.append(f"{where}: stage '{stage}' may use {' '.join(layers[stage]) or 'no other stage'}")
                elif target != stage and header != interfaces[target]:
                    errors.append(f"{where}: not '{target}''s interface ({interfaces[target]})")
            elif rel.startswith("tools/"):
                if header != interfaces[target]:
                    errors.append(f"{where}: the CLI uses a stage's interface ({interfaces[target]}) only")
            else:
                errors.append(f"{where}: {rel.split('/')[0]}/{rel.split('/')[1]} never includes the analyzer")
    return errors


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBR":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            used.add(p[1])
    return defined, used


def check_objects(root, build, layers):
    objs = {}
    for obj in glob.glob(os.path.join(build, "CMakeFiles", "*", "src", "**", "*.o"), recursive=True):
        key = obj.split(os.sep + "src" + os.sep, 1)[1][: -len(".c.o")]
        if os.path.exists(os.path.join(root, "src", key + ".c")):  # not a moved file's stale object
            objs.setdefault(key, obj)
    if not any(k.startswith("analyze/") for k in objs):
        return [f"{build}: no analyzer objects under CMakeFiles (built?)"]
    owner, uses = {}, {}
    for key, obj in objs.items():
        defined, used = symbols(obj)
        for s in defined:
            owner[s] = key
        uses[key] = used
    calls = collections.defaultdict(set)
    for key, used in uses.items():
        for s in used:
            if s in owner and owner[s] != key:
                calls[key].add((owner[s], s))
    errors = []
    for key in sorted(calls):
        for target, sym in sorted(calls[key]):
            if key.startswith("analyze/") and target.startswith("analyze/"):
                s, t = key.split("/")[1], target.split("/")[1]
                if s != t and t not in layers.get(s, []):
                    errors.append(f"src/{key}.c calls {sym} of src/{target}.c: stage '{s}' may not use '{t}'")
            circle_scope = key.startswith(("analyze/", "config/")) and target.split("/")[0] == key.split("/")[0]
            if circle_scope and key < target and any(t == key for t, _ in calls.get(target, ())):
                back = sorted(s for t, s in calls[target] if t == key)[0]
                errors.append(f"file circle: src/{key}.c calls {sym} of src/{target}.c, which calls {back} back")
    return errors


def main():
    root = sys.argv[1]
    layers, interfaces = read_map(os.path.join(root, "src", "analyze", "README.md"))
    on_disk = {d for d in os.listdir(os.path.join(root, "src", "analyze"))
               if os.path.isdir(os.path.join(root, "src", "analyze", d))}
    errors = [f"src/analyze/{d}/: a folder the map does not name" for d in sorted(on_disk - set(layers))]
    errors += [f"src/analyze/README.md: stage '{s}' has no folder" for s in sorted(set(layers) - on_disk)]
    errors += [f"stage '{s}' has no interface header src/analyze/{s}/{h}" for s, h in interfaces.items()
               if not os.path.exists(os.path.join(root, "src", "analyze", s, h))]
    c = cycle_in(layers)
    if c:
        errors.append("the map has a cycle: " + " -> ".join(c))
    errors += check_includes(root, layers, interfaces)
    if len(sys.argv) > 2:
        errors += check_objects(root, sys.argv[2], layers)
    for e in errors:
        print(e)
    print(f"check_layers: {len(errors)} problem(s)" if errors else
          f"check_layers: {len(layers)} stages keep to their map")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
