#!/usr/bin/env bash
# Fails when a module of a crate depends, through other modules of the same crate, on
# itself: each crate (crates/*/src and the CLI's src/) should read as layers, so that a
# module can be understood, tested and moved without the ones that depend on it.
#
# What is a node: one source file. A module declared with `mod x;` is its file (x.rs or
# x/mod.rs; a root file is `lib` or `main`); an inline `mod x { … }` belongs to the file
# it is written in. Test code is not read: an item under `#[cfg(test)]` (a `mod tests`,
# a helper, an import) is blanked out before anything else, as are comments (doc links
# are not imports) and string and char literals (but for serde's paths, below).
#
# What is an edge: a path that names another module of the crate, wherever it stands: in
# a `use`, in code, in an attribute (`#[arg(add = crate::completers::profiles())]`), and
# in the strings serde reads as paths (`#[serde(serialize_with = "crate::rawtx::f")]`):
# the compiler resolves all of them, so a circle through any of them is as real as one
# through `use` lines. A path starts with `crate::`, `super::`, `self::`, a child
# module's name, or a name a `use` of the module binds to a module of the crate (`use
# crate::cmd;` then `cmd::key::run()` is a path into cmd/key.rs, not only cmd/mod.rs).
# It points at the file of the deepest module the path walks through; when the next
# segment is an item, at the file that defines that item (see re-exports). Paths to
# other crates are not edges.
#
# Re-exports: a `use` (`pub` or not) binds a name in the module it stands in, but the
# item lives where it is defined. So a path to `m::Item` where m only imports Item (by
# name, or by a glob whose source defines it) is followed, import by import, to the
# module that defines Item; that is decidable from the source, no type checking needed.
# Where it is not (no definition found, e.g. a name made by a macro), the edge stays on
# m. Where the import chain leaves the crate (`pub use other_crate::Item`), the edge
# points at the last module of the crate on it: that module chose which Item the crate
# means, and the path breaks or changes meaning with it (`crate::config::ConfigFile` is
# config.rs's choice, though the type is defined in bridgectl-flow; a circle through it
# once hid here). A `pub use` is the module's facade, not its dependency: it is an edge
# of its own only where the module's code uses the name too. Without these two rules
# every `use crate::Error` would point at lib.rs, and lib.rs, re-exporting every
# module, would sit in one circle with all of them.
#
# Reads the crates named as arguments (their `src` folders, from the repository's root),
# by default crates/*/src and src; scripts/circles-fixtures/ holds one small crate per case the reading must catch
# (scripts/test-no-import-circles.sh runs them).
#
# Prints each circle as `crate: a -> b -> a` with the line behind each step, and exits 1;
# otherwise prints `N crates, M modules, no import circle` and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PYTHON'
import glob, os, re, sys

def blank(text, start, end):
    """text with [start, end) turned to spaces, newlines kept (line numbers hold)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]

LITERAL = re.compile(r"""
    //[^\n]*                                  # line and doc comments
  | /\*(?:[^*]|\*(?!/))*\*/                   # block comments (not nested: none here)
  | [bc]?r(?P<h>\#*)"(?:.|\n)*?"(?P=h)        # raw strings
  | [bc]?"(?:[^"\\]|\\.|\\\n)*"               # strings
  | b?'(?:[^'\\\n]|\\[^']+)'                  # chars ('{' would count as a brace)
""", re.X)

# Keys of a serde attribute whose string value is a path the compiler resolves.
SERDE_PATH = re.compile(r"\b(?:with|serialize_with|deserialize_with|default|"
                        r"skip_serializing_if|from|try_from|into|remote)\s*=\s*$")

def serde_path(text, m):
    """True when literal m is a path serde resolves: a string in a `#[serde(...)]`
    attribute after one of SERDE_PATH's keys."""
    attr = text.rfind("#[", 0, m.start())
    return (m.group(0).startswith('"') and re.fullmatch(r'"[\w:]+"', m.group(0))
            and text.startswith("#[serde(", attr) and not re.search(r"[\];]", text[attr:m.start()])
            and SERDE_PATH.search(text, 0, m.start()) is not None)

def clean(text):
    """Comments and literals blanked (but for the quotes of a path serde resolves),
    then every #[cfg(test)] item."""
    for m in reversed(list(LITERAL.finditer(text))):
        if serde_path(text, m):
            text = blank(text, m.start(), m.start() + 1)
            text = blank(text, m.end() - 1, m.end())
        else:
            text = blank(text, m.start(), m.end())
    for m in reversed(list(re.finditer(r"#\[cfg\(test\)\]", text))):
        text = blank(text, m.start(), end_of_item(text, m.end()))
    return text

def end_of_item(text, i):
    """End of the item (or field, or statement) that starts at i."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]" or (c == "}" and depth > 0):
            if depth == 0:
                return i
            depth -= 1
        elif c == "}":
            return i
        elif c in ";," and depth == 0:
            return i + 1
        elif c == "{" and depth == 0:
            return matching(text, i) + 1
        i += 1
    return i

def matching(text, i):
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return j
    return len(text)

USE = re.compile(r"\b(pub(?:\([\w: ]+\))?\s+)?use\s+((?:::)?[\w{][^;]*);")
MOD = re.compile(r"\bmod\s+(\w+)\s*([;{])")
ITEM = re.compile(r"\b(?:fn|struct|enum|union|trait|type|const|static|macro_rules!)\s+"
                  r"(?:mut\s+)?(?!fn\b)(\w+)")
PATH = re.compile(r"(?<![\w:$])\$?(\w+(?:\s*::\s*\w+)+)")

def use_tree(tree, prefix=()):
    """`a::{b, c::d as e, self}` -> [(path, bound name)]; a glob binds `*`."""
    tree = re.sub(r"\s+", " ", tree).strip()
    head, brace, rest = tree.partition("{")
    segs = prefix + tuple(s.strip() for s in head.split("::") if s.strip())
    if not brace:
        path, _, alias = " ".join(segs).partition(" as ")
        segs = tuple(path.split())
        if segs[-1] == "self":
            segs = segs[:-1]
        return [(segs, alias.strip() or segs[-1])]
    out, depth, part = [], 0, ""
    for c in rest[: rest.rindex("}")] + ",":
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            out += use_tree(part, segs) if part.strip() else []
            part = ""
        else:
            part += c
    return out

class Module:
    def __init__(self, path, file):
        self.path, self.file = path, file
        self.children = {}  # name -> module path (a tuple of names)
        self.defs = set()   # names of the items it defines
        self.uses = []      # (path, name it binds, pub?, offset) for each `use`
        self.body = ""      # its text with the `use`s blanked
        self.code = []      # (path, offset) for each path in body

class Crate:
    def __init__(self, root):
        self.modules, self.texts = {}, {}
        self.load((), root)

    def node(self, path):
        return self.modules[path].file

    def load(self, path, file):
        text = self.texts[file] = clean(open(file).read())
        self.scan(path, file, text, 0, len(text))

    def scan(self, path, file, text, start, end):
        """The module `path`: text[start:end] of file, without its inline modules."""
        mod = self.modules[path] = Module(path, file)
        i, inner = start, []
        for m in MOD.finditer(text, start, end):
            if m.start() < i:
                continue
            name = m.group(1)
            mod.children[name] = path + (name,)
            if m.group(2) == "{":
                close = matching(text, m.end() - 1)
                inner.append((m.start(), close))
                self.scan(path + (name,), file, text, m.end(), close)
                i = close
            else:
                self.load(path + (name,), self.child_file(file, name))
        own = text[start:end]
        for a, b in inner:
            own = blank(own, a - start, b - start)
        top = list(self.depths(own))
        mod.defs = {m.group(1) for m in ITEM.finditer(own) if top[m.start()] == 0}
        for m in USE.finditer(own):
            for segs, name in use_tree(m.group(2)):
                mod.uses.append((segs, name, bool(m.group(1)), start + m.start()))
        mod.body = USE.sub(lambda u: re.sub(r"[^\n]", " ", u.group(0)), own)
        mod.code = [(m.group(1), start + m.start()) for m in PATH.finditer(mod.body)]

    @staticmethod
    def depths(text):
        depth = 0
        for c in text:
            yield depth
            depth += {"{": 1, "}": -1}.get(c, 0)

    @staticmethod
    def child_file(file, name):
        base = os.path.dirname(file)
        if os.path.basename(file) not in ("lib.rs", "main.rs", "mod.rs"):
            base = file[: -len(".rs")]
        for f in (f"{base}/{name}.rs", f"{base}/{name}/mod.rs"):
            if os.path.exists(f):
                return f
        sys.exit(f"{file}: no file for `mod {name}`")

    def walk(self, here, segs):
        """(deepest module the path walks through, segments left), or None."""
        first, segs = segs[0], list(segs[1:])
        if first in ("crate", "$crate"):
            path = ()
        elif first == "self":
            path = here
        elif first == "super":
            path = here[:-1]
            while segs and segs[0] == "super":
                path, segs = path[:-1], segs[1:]
        elif first in self.modules[here].children:
            path = here + (first,)
        elif self.bound_module(here, first) is not None:
            path = self.bound_module(here, first)
        else:
            return None
        while segs and segs[0] in self.modules[path].children:
            path += (segs.pop(0),)
        return path, segs

    def bound_module(self, here, name):
        """The module of the crate a `use` of module `here` binds `name` to, or None."""
        for segs, bound, _, _ in self.modules[here].uses:
            if bound == name and (segs[0] in ("crate", "$crate", "self", "super")
                                  or segs[0] in self.modules[here].children):
                walked = self.walk(here, segs)
                if walked and not walked[1]:
                    return walked[0]
        return None

    def target(self, here, segs, seen=()):
        """The file a path leads to, or None (another crate)."""
        walked = self.walk(here, segs)
        if walked is None:
            return None
        path, rest = walked
        if not rest or rest[0] == "*":
            return self.node(path)
        return self.definer(path, rest[0], seen) or self.node(path)

    def definer(self, path, name, seen):
        """The file that defines `name` as seen from module `path`, or None."""
        if (path, name) in seen:
            return None
        seen += ((path, name),)
        mod = self.modules[path]
        if name in mod.defs:
            return mod.file
        for segs, bound, _, _ in mod.uses:
            if bound == name:
                return self.target(path, segs, seen) or mod.file
        for segs, bound, _, _ in mod.uses:
            walked = bound == "*" and self.walk(path, segs[:-1])
            if walked and not walked[1]:
                found = self.definer(walked[0], name, seen)
                if found:
                    return found
        return None

    def edges(self):
        """{(from file, to file): (line number, what)} over every module."""
        out = {}
        for mod in self.modules.values():
            text = self.texts[mod.file]
            used = lambda name: name != "*" and re.search(rf"\b{name}\b", mod.body)
            refs = [(segs, at, "use " + "::".join(segs))
                    for segs, name, public, at in mod.uses if not public or used(name)]
            refs += [(re.split(r"\s*::\s*", p), at, p) for p, at in mod.code]
            for segs, at, what in refs:
                to = self.target(mod.path, segs)
                if to and to != mod.file:
                    line = text.count("\n", 0, at) + 1
                    out.setdefault((mod.file, to), (line, what))
        return out

def circles(nodes, edges):
    """For each edge that lies on a circle, the shortest circle through it, each once
    (starting at its smallest module): enough to see every edge that has to go."""
    succ = {n: sorted(b for a, b in edges if a == n) for n in nodes}
    found = set()
    for a, b in edges:
        back = {b: None}  # breadth first from b back to a
        queue = [b]
        while queue and a not in back:
            n = queue.pop(0)
            for m in succ[n]:
                if m not in back:
                    back[m] = n
                    queue.append(m)
        if a not in back:
            continue
        cycle, n = [], a
        while n is not None:
            cycle.insert(0, n)
            n = back[n]
        cycle = cycle[-1:] + cycle[:-1]  # a, b, ..., (back to) a
        i = cycle.index(min(cycle))
        found.add(tuple(cycle[i:] + cycle[: i + 1]))
    return sorted(found)

if sys.argv[1:]:
    roots = [(os.path.basename(os.path.dirname(os.path.abspath(d))), d) for d in sys.argv[1:]]
else:
    roots = [(os.path.basename(os.path.dirname(d)), d) for d in sorted(glob.glob("crates/*/src"))]
    roots.append(("bridgectl", "src"))
failed, total = 0, 0
for name, src in roots:
    root = next(f for f in (f"{src}/lib.rs", f"{src}/main.rs") if os.path.exists(f))
    crate = Crate(root)
    files = {m.file for m in crate.modules.values()}
    total += len(files)
    edges = crate.edges()
    label = lambda f: os.path.relpath(f, src).removesuffix(".rs").removesuffix("/mod").replace("/", "::")
    for cycle in circles(files, edges):
        failed += 1
        print(f"{name}: " + " -> ".join(label(f) for f in cycle))
        for a, b in zip(cycle, cycle[1:]):
            line, what = edges[(a, b)]
            print(f"    {a}:{line}: {what}")
if failed:
    sys.stdout.flush()
    print(f"{failed} import circle(s): move what the modules share to a module of its own",
          file=sys.stderr)
    sys.exit(1)
print(f"{len(roots)} crates, {total} modules, no import circle")
PYTHON
