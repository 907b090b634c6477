#!/usr/bin/python3
"""hw/lint_hls.py - check kernel C sources against the HLS synthesizable subset
with libclang, where hw/lint_hls.sh (a C compiler, nm and the call graph)
cannot see: types, casts, loop bounds, and the pragmas that name things.

usage: /usr/bin/python3 hw/lint_hls.py [-DNAME[=VALUE]]... [--top NAME] DIR
       /usr/bin/python3 hw/lint_hls.py --list-rules
       (`make lint-hls-clang` runs it on kernels/)

Every DIR/*.c is parsed alone, with the headers it includes, in the
synthesis view that Vitis HLS compiles: -std=c99 -D__SYNTHESIS__ -IDIR
-IDIR/profiles, plus each -D given here (so a profile can be chosen:
-DTSR_PROFILE_HEADER='<profiles/profile_stories15m.h>').  Only declarations
and code that sit in files under DIR are checked; system headers are not.

Output: one line per problem,
    lint-hls: FILE:LINE: RULE: message
sorted by file and line, then "lint-hls-clang: N files OK" when there is
none.  Exit status 0 clean, 1 on any problem (a parse error is one, rule
`parse`), 2 on bad usage or when libclang cannot be loaded.

Needs Debian's python3-clang and libclang (`make deps`), run with the
system python (/usr/bin/python3: the bindings are a Debian package).  The
library is found by TSR_LIBCLANG=/path/to/libclang.so.N if set, else the
newest /usr/lib/llvm-*/lib/libclang.so.1.

Rules.  The reasons cite AMD UG1399 (Vitis High-Level Synthesis User
Guide) by section title; docs/hls-flow.md, "The libclang lint", has the
longer story and what each rule cannot see.

  pointer-to-pointer  A declared type (parameter, local, global, struct
        field, typedef, return type) that is a pointer to a pointer, or an
        array of pointers.  UG1399 "Pointer Limitations": pointer to
        pointer is not supported, and arrays of pointers may not point to
        further pointers; "Pointers" keeps them off the top interface.
  pointer-field       A struct field of pointer type (or array of pointers)
        in a struct used by a function reachable from the top (`tessera_top`,
        or --top) in the call graph: as the type of a parameter, local,
        global or, transitively, field.  UG1399 "Structs" / "Structs in the
        Interface": structs are disaggregated into their members, and a
        pointer member is an address that names no memory the tool can
        build.
  pointer-cast        An explicit cast from one pointer type to another
        whose pointee types differ, ignoring qualifiers; void * counts.
        UG1399 "Pointer Limitations", "General Pointer Casting": only casts
        between native C types are supported.
  memcpy-type         memcpy/memmove whose destination and source point to
        different element types (before their conversion to void *; arrays
        decay to their element type), and memset with a value other than 0
        on elements wider than a byte.  That is type punning through the
        back door: the same "General Pointer Casting" limit, and UG1399
        "Unsupported C/C++ Constructs" (the construct must be unambiguous).
  loop-index-64       A for-loop whose init declares or assigns an integer
        of 8 bytes (uint64_t, int64_t, long, size_t, ...).  UG1399 "Data
        Types and Bit-Widths": operators are as wide as their operands,
        and 64-bit counters make wider, slower adders and comparators.
  loop-tripcount      A for/while/do loop whose bound is not an integer
        constant expression (see "bounds" below) and whose body has no
        `#pragma HLS LOOP_TRIPCOUNT` before its first nested loop.  UG1399
        "pragma HLS loop_tripcount", "Working with Variable Loop Bounds":
        without it the latency is reported as "?", and so is every figure
        built on it.
  unroll-variable     `#pragma HLS UNROLL` without factor= (and not off=true)
        on a loop whose trip count is not a compile-time constant.  UG1399
        "pragma HLS unroll": a loop can be unrolled completely only when
        its bounds are known at compile time (partial unrolling needs no
        such thing).
  pragma-name         A `#pragma HLS ... variable=V` or `port=P` that names
        nothing: port= must be a parameter of the enclosing function (or
        `return`); variable= a parameter, a local or a file-scope variable
        (file scope only, outside a function); a member path a.b.c needs
        each later part to be a field of the struct type so far.  Vitis
        HLS only warns about a pragma on a missing name (UG1448 "Cannot
        Locate Memory Object") and drops it.
  m-axi-depth         An `INTERFACE m_axi` pragma without depth=.  UG1399
        "Multi-Access Pointers and RTL Simulation": without a depth
        co-simulation models one element and stalls on the second.
  m-axi-null-test     An m_axi pointer of the top, or the parameter it is
        passed to down the call graph, tested against NULL (== / != with a
        constant, !p, or p as a condition) in the synthesis view.  UG1399
        "Pointers on the Interface": an m_axi port is an offset register
        into device memory, never a null pointer; the test is dead logic at
        best, and it hides a host bug at worst.
  m-axi-volatile      An `INTERFACE m_axi` pragma that says `volatile` on a
        parameter whose pointee is not volatile-qualified.  UG1399
        "Volatile" / "Understanding Volatile Data": only volatile accesses
        are kept one for one; without it all but the last write (or the
        first read) may be optimized away.
  pipeline-divide     An integer / or % by a divisor that is not an integer
        constant expression inside a loop (or function) marked PIPELINE.
        UG1399 "Data Types and Bit-Widths": division and modulus are the
        costly operators; a run-time divider is a multi-cycle core in
        every pipeline stage that holds it.
  pragma-value        A numeric pragma option (II, factor, depth, distance,
        limit, min, max, dim, latency, burst lengths...) whose value is not
        a decimal literal nor an object-like macro that names one (through
        macros of one token each).  UG1399 "Using #define with Pragma
        Directives" shows plain #define'd integers; a cast, a ternary or
        arithmetic is not what it documents, and a value Vitis cannot read
        is dropped with a warning.  Per-profile literals: TSR_LIT_*
        (hw/pragma_literals.py).
  dependence-register A DEPENDENCE pragma whose variable is registers: a
        scalar, an array partitioned completely in every dimension, or one
        whose banks hold fewer elements than the default complete_threshold
        (4, UG1399 config_array_partition) and that no BIND_STORAGE keeps a
        memory; for a parameter, what its callers pass.  UG1399 "pragma HLS
        dependence": the distance is between accesses of an array; a
        recurrence through an fadd on registers runs at the adder's latency
        whatever the pragma says.
  partition-call      An ARRAY_PARTITION / ARRAY_RESHAPE on a local or a
        parameter (or a member path of a local struct) whose partitioned
        dimension is indexed only below a non-inlined call: the array handed whole to a
        callee that states no partition on its parameter, or the struct
        handed by pointer.  Inlined callees (INLINE without off) are
        followed.  UG1399 "pragma HLS array_partition" places the pragma in
        the function where the array is defined.  No exception: the
        kernel's own state (st) is checked like any other local.
  partition-pick      An ARRAY_PARTITION whose partitioned dimension is
        indexed by a value known only at run time, and the partition so
        picked handed to a non-inlined call (directly, or through inlined
        ones): one instance of the callee serves every pick.  Constant
        picks are integer constant expressions and operators over the
        variables of fully unrolled loops around the call, parameters
        bound to constants along the inlined chain, and locals set once
        from them.

Bounds: a loop's bound is constant when its condition is one comparison
(<, <=, >, >=, ==, !=) with an integer constant expression on one side
(literals, enum constants, sizeof, and macros that expand to them).  Its
trip count is constant when, besides, it is a for-loop whose init sets
its variables to constant expressions and whose step is ++, --, or a
compound assignment by a constant.

Pragmas are not in the AST: they are read from the tokens of every file
under DIR that a unit includes, minus the ranges the preprocessor skipped
(#if'd out in the synthesis view), plus `_Pragma("HLS ...")` in the source
or in the body of a macro used there (followed through macros that use
macros; a pragma text built from a macro's arguments is not seen).  A
pragma belongs to the innermost loop whose body holds its line, else to
the function whose body holds it, else to file scope.
"""

import glob
import os
import re
import sys

USAGE = "usage: lint_hls.py [-DNAME[=VALUE]]... [--top NAME] DIR | --list-rules"

RULES = [
    ("pointer-to-pointer", "pointer to pointer, or array of pointers"),
    ("pointer-field", "pointer-typed struct field reachable from the top"),
    ("pointer-cast", "explicit cast between different pointer types"),
    ("memcpy-type", "memcpy between different element types, memset of non-zero"),
    ("loop-index-64", "for-loop induction variable of 8 bytes"),
    ("loop-tripcount", "variable-bound loop without LOOP_TRIPCOUNT"),
    ("unroll-variable", "UNROLL without factor= on a non-constant trip count"),
    ("pragma-name", "pragma variable=/port= naming something that does not exist"),
    ("m-axi-depth", "INTERFACE m_axi without depth="),
    ("m-axi-null-test", "m_axi pointer tested against NULL"),
    ("m-axi-volatile", "INTERFACE m_axi volatile on a non-volatile pointee"),
    ("pipeline-divide", "run-time integer division or modulo in a PIPELINE region"),
    ("pragma-value", "numeric pragma option that is not a literal or a macro naming one"),
    ("dependence-register", "DEPENDENCE pragma on a variable that is registers"),
    ("partition-call", "partition pragma that reaches its array only through a non-inlined call"),
    ("partition-pick", "one partition picked at run time and handed to a non-inlined call"),
]

# --------------------------------------------------------------- libclang ---


def load_clang():
    """The clang.cindex module with its library loaded, or exit 2."""
    try:
        import clang.cindex as ci
    except ImportError:
        sys.stderr.write("lint-hls: python3-clang is missing (%s): run `make deps`\n" % sys.executable)
        sys.exit(2)
    ci.Config.set_compatibility_check(False)

    def version(path):
        m = re.search(r"llvm-(\d+)", path) or re.search(r"libclang-(\d+)", path)
        return int(m.group(1)) if m else 0

    found = sorted(glob.glob("/usr/lib/llvm-*/lib/libclang.so.1"), key=version, reverse=True)
    found += sorted(glob.glob("/usr/lib/*-linux-gnu/libclang-*.so.1"), key=version, reverse=True)
    if os.environ.get("TSR_LIBCLANG"):
        found = [os.environ["TSR_LIBCLANG"]]
    for path in found:
        try:
            ci.Config.set_library_file(path)
            ci.Index.create()
            return ci
        except Exception:          # a library that does not load: try the next
            ci.Config.library_file = None
    sys.stderr.write("lint-hls: no loadable libclang (tried: %s): run `make deps`\n"
                     % (", ".join(found) or "/usr/lib/llvm-*/lib/libclang.so.1"))
    sys.exit(2)


ci = None   # clang.cindex, set by main()
K = None    # CursorKind
T = None    # TypeKind

# ---------------------------------------------------------------- sources ---


class Source:
    """The files under DIR, and how to print their names."""

    def __init__(self, dirarg):
        self.dirarg = dirarg.rstrip("/") or "/"
        self.root = os.path.realpath(dirarg)
        self.real = {}

    def ours(self, name):
        """Real path of a file under DIR, or None."""
        if name is None:
            return None
        if name not in self.real:
            r = os.path.realpath(name)
            self.real[name] = r if r.startswith(self.root + os.sep) else None
        return self.real[name]

    def show(self, real):
        return os.path.join(self.dirarg, os.path.relpath(real, self.root))


SRC = None


def where(c):
    """(real path, line) of a cursor in a file under DIR, or None."""
    loc = c.location
    if loc.file is None:
        return None
    real = SRC.ours(loc.file.name)
    return (real, loc.line) if real else None


class Report:
    def __init__(self):
        self.seen = set()

    def add(self, real, line, rule, msg):
        self.seen.add((SRC.show(real), line, rule, msg))

    def at(self, c, rule, msg):
        w = where(c)
        if w:
            self.add(w[0], w[1], rule, msg)

    def lines(self):
        return ["lint-hls: %s:%d: %s: %s" % p for p in sorted(self.seen)]


# ----------------------------------------------------------- AST helpers ---

COMPARE = {"<", "<=", ">", ">=", "==", "!="}
ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="}


def kids(c):
    """Children that are expressions or statements (type references dropped)."""
    return [k for k in c.get_children() if k.kind not in (K.TYPE_REF, K.TEMPLATE_REF)]


def strip(c):
    """Look through parentheses and implicit conversions (UNEXPOSED_EXPR)."""
    while c is not None and c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
        ks = kids(c)
        if len(ks) != 1:
            break
        c = ks[0]
    return c


def tokens(c):
    return list(c.get_tokens())


BINARY = COMPARE | ASSIGN | {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "&&", "||", ","}
UNARY = {"!", "-", "+", "~", "&", "*", "++", "--"}


def spelled_here(c, ks):
    """Whether c and its operands are spelled in the file (not inside a
    macro body): only then do their tokens show the operator."""
    return all(k.extent.start.offset < k.extent.end.offset for k in ks) and \
        c.extent.start.offset < c.extent.end.offset


def binop(c):
    """The operator of a binary or compound-assignment cursor, or None when
    the tokens do not show it (an expression spelled inside a macro)."""
    ks = kids(c)
    if len(ks) != 2 or not spelled_here(c, ks):
        return None
    lhs_end, rhs_start = ks[0].extent.end.offset, ks[1].extent.start.offset
    for t in tokens(c):
        off = t.extent.start.offset
        if lhs_end <= off < rhs_start and t.spelling in BINARY:
            return t.spelling
    return None


def unop(c):
    """The operator of a unary cursor ('!', '-', '&', 'x++' as '++'), or
    None when the tokens do not show it."""
    ks = kids(c)
    if len(ks) != 1 or not spelled_here(c, ks):
        return None
    ts = tokens(c)
    if ts and ts[0].extent.start.offset < ks[0].extent.start.offset and ts[0].spelling in UNARY:
        return ts[0].spelling
    if ts and ts[-1].extent.start.offset >= ks[0].extent.end.offset and ts[-1].spelling in UNARY:
        return ts[-1].spelling
    return None


def is_ice(c, keys=frozenset()):
    """An integer constant expression (C99 6.6): literals, enum constants,
    sizeof, casts and operators over them.  No variable, call or member,
    but for the declarations in keys (decl_key), which count as constants
    (is_constant_in)."""
    c = strip(c)
    if c is None:
        return False
    k = c.kind
    if k in (K.INTEGER_LITERAL, K.CHARACTER_LITERAL, K.FLOATING_LITERAL, K.CXX_UNARY_EXPR):
        return True
    if k == K.DECL_REF_EXPR:
        r = c.referenced
        return r is not None and (r.kind == K.ENUM_CONSTANT_DECL or
                                  (bool(keys) and decl_key(r) in keys))
    if k in (K.PAREN_EXPR, K.UNEXPOSED_EXPR, K.CSTYLE_CAST_EXPR, K.UNARY_OPERATOR,
             K.BINARY_OPERATOR, K.CONDITIONAL_OPERATOR):
        ks = kids(c)
        if not ks:
            return False
        if k == K.UNARY_OPERATOR and unop(c) in ("++", "--", "&", "*"):
            return False
        if k == K.BINARY_OPERATOR and binop(c) in ASSIGN | {","}:
            return False
        return all(is_ice(x, keys) for x in ks)
    return False


def text(c, limit=60):
    """The source of an expression, tokens re-spaced, for messages."""
    s = " ".join(t.spelling for t in tokens(c))
    s = re.sub(r"\s+([)\],;])", r"\1", s)
    s = re.sub(r"([(\[])\s+", r"\1", s)
    s = re.sub(r"\s*(\.|->)\s*", r"\1", s)
    s = re.sub(r"(\w)\s+([(\[])", r"\1\2", s)
    return s if len(s) <= limit else s[:limit - 3] + "..."


def walk(c):
    """c and everything below it, in source order."""
    yield c
    for k in c.get_children():
        yield from walk(k)


# ------------------------------------------------------------------ types ---

INTEGER_KINDS = None
ARRAY_KINDS = None


def canon(t):
    return t.get_canonical()


def strip_arrays(t):
    t = canon(t)
    while t.kind in ARRAY_KINDS:
        t = canon(t.element_type)
    return t


def type_key(t):
    """A type's identity with every qualifier dropped (TypeKind is
    qualifier-free; records and enums by their declaration)."""
    t = canon(t)
    if t.kind == T.POINTER:
        return ("*", type_key(t.get_pointee()))
    if t.kind in ARRAY_KINDS:
        n = t.element_count if t.kind == T.CONSTANTARRAY else -1
        return ("[]", n, type_key(t.element_type))
    if t.kind in (T.RECORD, T.ENUM):
        return (t.kind.name, t.get_declaration().get_usr() or t.spelling)
    if t.kind in (T.FUNCTIONPROTO, T.FUNCTIONNOPROTO):
        return ("fn", re.sub(r"\b(const|volatile|restrict)\b\s*", "", t.spelling))
    return (t.kind.name,)


def plain(t):
    """A type's spelling without qualifiers, for messages."""
    return re.sub(r"\b(const|volatile|restrict)\b\s*", "", t.spelling).strip()


def pointee_of(t):
    """What a pointer or an array (decayed) points to, or None; typedef
    names kept where the type spells them."""
    if t.kind == T.POINTER:
        return t.get_pointee()
    if t.kind in ARRAY_KINDS:
        return t.element_type
    t = canon(t)
    if t.kind == T.POINTER:
        return t.get_pointee()
    if t.kind in ARRAY_KINDS:
        return t.element_type
    return None


def record_of(t):
    """The struct/union behind typedefs, arrays and pointers, or None."""
    t = canon(t)
    while True:
        if t.kind in ARRAY_KINDS:
            t = canon(t.element_type)
        elif t.kind == T.POINTER:
            t = canon(t.get_pointee())
        elif t.kind == T.RECORD:
            return t
        else:
            return None


def record_name(t):
    d = t.get_declaration()
    return d.spelling or plain(t)


def field(record, name):
    for f in record.get_fields():
        if f.spelling == name:
            return f
    return None


# ---------------------------------------------------------------- pragmas ---


class Pragma:
    """One `#pragma HLS ...` (or _Pragma): its kind (first word, upper
    case), key=value options (keys lower case) and bare words (lower case,
    in order), and the file and line where it takes effect."""

    def __init__(self, real, line, body, macro=None):
        self.real, self.line, self.macro = real, line, macro
        words = re.sub(r"\s*=\s*", "=", body.strip()).split()
        self.kind = words[0].upper() if words else ""
        self.opts, self.words = {}, []
        for w in words[1:]:
            if "=" in w:
                key, val = w.split("=", 1)
                self.opts[key.lower()] = val
            else:
                self.words.append(w.lower())
        self.flags = set(self.words)
        self.function = self.loop = None

    def mode(self):
        """INTERFACE mode: mode=X, else the first bare word."""
        if "mode" in self.opts:
            return self.opts["mode"].lower()
        return self.words[0] if self.words else ""


def pragma_body(s):
    """The text after `HLS` if s (after `#pragma`, or inside _Pragma) is an
    HLS pragma, else None."""
    m = re.match(r"\s*HLS\b(.*)$", s, re.I | re.S)
    return m.group(1) if m else None


def strip_comments(s):
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    return re.sub(r"//.*", "", s)


def skipped_lines(tu, path):
    """Line ranges the preprocessor skipped in path (#if'd out)."""
    lib = ci.conf.lib
    f = ci.File.from_name(tu, path)
    rl = lib.clang_getSkippedRanges(tu, f)
    out = []
    if rl:
        for i in range(rl.contents.count):
            r = rl.contents.ranges[i]
            out.append((r.start.line, r.end.line))
        lib.clang_disposeSourceRangeList(rl)
    return out


def unescape(lit):
    """The text of a C string literal token."""
    s = lit[lit.index('"') + 1:-1]
    return re.sub(r"\\(.)", r"\1", s)


def file_pragmas(tu, real, name):
    """Every HLS pragma written in file `name` that the preprocessor kept."""
    with open(real, "rb") as fh:
        data = fh.read()
    lines = data.decode("utf-8", "replace").split("\n")
    f = ci.File.from_name(tu, name)
    ext = ci.SourceRange.from_locations(ci.SourceLocation.from_offset(tu, f, 0),
                                        ci.SourceLocation.from_offset(tu, f, len(data)))
    skip = skipped_lines(tu, name)
    # lines of preprocessor directives: a _Pragma in a #define is not one
    # until the macro is used (macro_pragmas)
    directive, cont = set(), False
    for n, ln in enumerate(lines, 1):
        if cont or ln.lstrip().startswith("#"):
            directive.add(n)
        cont = ln.endswith("\\") and n in directive
    toks = list(tu.get_tokens(extent=ext))
    out = []
    prev_line = 0
    for i, t in enumerate(toks):
        line = t.location.line
        first = line != prev_line
        prev_line = line
        if any(a <= line <= b for a, b in skip):
            continue
        if first and t.spelling == "#" and i + 1 < len(toks) and toks[i + 1].spelling == "pragma" \
                and toks[i + 1].location.line == line:
            # the directive's text, backslash continuations joined
            n, s = line - 1, ""
            while n < len(lines):
                s += lines[n]
                if not s.endswith("\\"):
                    break
                s, n = s[:-1] + " ", n + 1
            s = strip_comments(s)
            m = re.match(r"\s*#\s*pragma\b(.*)$", s, re.S)
            body = pragma_body(m.group(1)) if m else None
            if body is not None:
                out.append(Pragma(real, line, body))
        elif t.spelling == "_Pragma" and line not in directive and i + 3 < len(toks) \
                and toks[i + 2].kind == ci.TokenKind.LITERAL:
            body = pragma_body(unescape(toks[i + 2].spelling))
            if body is not None:
                out.append(Pragma(real, line, body))
    return out


def macro_pragmas(tu):
    """HLS pragmas that macros used under DIR expand to: each _Pragma in the
    macro's body, or in the bodies of the macros it names, placed at the
    line where the outermost macro is used."""
    defs = {}
    uses = []
    for c in tu.cursor.get_children():
        if c.kind == K.MACRO_DEFINITION:
            defs[c.spelling] = [t.spelling for t in c.get_tokens()]
        elif c.kind == K.MACRO_INSTANTIATION and where(c):
            uses.append(c)

    def expand(name, seen):
        body = defs.get(name, [])[1:]
        found = []
        for i, s in enumerate(body):
            if s == "_Pragma" and i + 2 < len(body) and body[i + 2].startswith(('"', 'L"')):
                b = pragma_body(unescape(body[i + 2]))
                if b is not None:
                    found.append(b)
            elif s in defs and s not in seen and s != name:
                found += expand(s, seen | {s})
        return found

    out = []
    for c in uses:
        real, line = where(c)
        if any(a <= line <= b for a, b in skipped_lines(tu, c.location.file.name)):
            continue
        for b in expand(c.spelling, {c.spelling}):
            out.append(Pragma(real, line, b, macro=c.spelling))
    return out


def object_macros(tu):
    """{name: [body tokens]} of the object-like macros the unit defines (the
    last definition wins; function-like macros are left out)."""
    out = {}
    for c in tu.cursor.get_children():
        if c.kind != K.MACRO_DEFINITION:
            continue
        toks = list(c.get_tokens())
        if len(toks) > 1 and toks[1].spelling == "(" and \
                toks[0].extent.end.offset == toks[1].extent.start.offset:
            out.pop(c.spelling, None)
            continue
        out[c.spelling] = [t.spelling for t in toks[1:]]
    return out


# ------------------------------------------------------------------ loops ---


class Loop:
    """A for/while/do statement split into its parts."""

    def __init__(self, c):
        self.c = c
        self.kind = c.kind
        self.real, self.line = where(c) or (None, c.location.line)
        self.init = self.cond = self.inc = self.body = None
        self.ok = True
        ks = kids(c)
        if c.kind == K.FOR_STMT:
            self.split_for(ks)
        elif c.kind == K.WHILE_STMT and len(ks) == 2:
            self.cond, self.body = ks
        elif c.kind == K.DO_STMT and len(ks) == 2:
            self.body, self.cond = ks
        else:
            self.ok = False
        b = self.body.extent if self.body is not None else c.extent
        self.body_lines = (b.start.line, b.end.line)
        self.body_offsets = (b.start.offset, b.end.offset)

    def split_for(self, ks):
        """for (init; cond; inc) body: libclang leaves out empty parts, so
        place each child by the offsets of the header's `;` and `)` (all
        four parts present need no placing: a header from a macro)."""
        if len(ks) == 4:
            self.init, self.cond, self.inc, self.body = ks
            return
        depth, marks = 0, []
        for t in tokens(self.c):
            s = t.spelling
            if s == "(":
                depth += 1
            elif s == ")":
                depth -= 1
                if depth == 0:
                    marks.append(t.extent.start.offset)
                    break
            elif s == ";" and depth == 1:
                marks.append(t.extent.start.offset)
        if len(marks) != 3:
            self.ok = False
            self.body = ks[-1] if ks else None
            return
        for k in ks:
            off = k.extent.start.offset
            if off < marks[0]:
                self.init = k
            elif off < marks[1]:
                self.cond = k
            elif off < marks[2]:
                self.inc = k
            else:
                self.body = k

    def bound_constant(self):
        """One comparison with an integer constant expression on one side.
        A condition spelled inside a macro hides its operator from the
        tokens: there, a for-loop's own variable against a constant counts
        as a comparison (nothing else is a sensible loop condition)."""
        if self.cond is None:
            return False
        c = strip(self.cond)
        if c.kind != K.BINARY_OPERATOR:
            return False
        lhs, rhs = kids(c)
        op = binop(c)
        if op is None:
            own = self.own_variables()
            return any(is_ice(a) and strip(b).kind == K.DECL_REF_EXPR and strip(b).spelling in own
                       for a, b in ((lhs, rhs), (rhs, lhs)))
        return op in COMPARE and (is_ice(lhs) or is_ice(rhs))

    def own_variables(self):
        """Names a for-loop's init declares or assigns."""
        if self.kind != K.FOR_STMT or self.init is None:
            return set()
        if self.init.kind == K.DECL_STMT:
            return {v.spelling for v in kids(self.init) if v.kind == K.VAR_DECL}
        return {strip(kids(a)[0]).spelling for a in assignments(self.init)}

    def variable_trip(self):
        """Why the trip count is not a compile-time constant, or None when
        it is: constant bound, constant start, constant step (for-loops)."""
        if not self.bound_constant():
            return "bound '%s'" % self.bound_text()
        if self.kind != K.FOR_STMT:
            return "a %s loop" % ("while" if self.kind == K.WHILE_STMT else "do")
        init = self.init
        if init is None:
            return "no start in the for-init"
        if init.kind == K.DECL_STMT:
            for v in kids(init):
                vals = kids(v)
                if v.kind != K.VAR_DECL or not vals or not is_ice(vals[-1]):
                    return "start '%s'" % text(init).rstrip(";")
        else:
            sets = assignments(init)
            if not sets or any(binop(a) != "=" or not is_ice(kids(a)[1]) for a in sets):
                return "start '%s'" % text(init)
        inc = strip(self.inc) if self.inc is not None else None
        if inc is not None and inc.kind == K.UNARY_OPERATOR and unop(inc) in ("++", "--", None):
            return None             # None: spelled in a macro, and only ++/-- step a loop
        if inc is not None and inc.kind == K.COMPOUND_ASSIGNMENT_OPERATOR and is_ice(kids(inc)[1]):
            return None
        return "step '%s'" % (text(self.inc) if self.inc is not None else "(none)")

    def bound_text(self):
        return text(self.cond) if self.cond is not None else "(none)"


def assignments(c):
    """Assignment expressions in c (through commas and parentheses)."""
    c = strip(c)
    if c.kind in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR):
        op = binop(c)
        if op == ",":
            return assignments(kids(c)[0]) + assignments(kids(c)[1])
        if op in ASSIGN:
            return [c]
    return []


# -------------------------------------------------------------- functions ---


class Function:
    """A function definition under DIR, with what the rules need of it."""

    def __init__(self, c, unit):
        self.c, self.unit = c, unit
        self.name, self.usr = c.spelling, c.get_usr()
        self.real = where(c)[0]
        self.params = [a.spelling for a in c.get_arguments()]
        self.param_cursor = {a.spelling: a for a in c.get_arguments()}
        self.local_cursor = {}
        self.loops = []
        self.calls = []            # (callee usr, [argument cursors], cursor)
        self.var_types = [a.type for a in c.get_arguments()] + [c.result_type]
        self.globals_used = []
        ext = c.extent
        self.lines = (ext.start.line, ext.end.line)
        for n in walk(c):
            if n.kind == K.VAR_DECL:
                self.local_cursor.setdefault(n.spelling, n)
                self.var_types.append(n.type)
            elif n.kind in (K.FOR_STMT, K.WHILE_STMT, K.DO_STMT):
                self.loops.append(Loop(n))
            elif n.kind == K.CALL_EXPR:
                r = n.referenced
                if r is not None and r.kind == K.FUNCTION_DECL:
                    self.calls.append((r.get_usr(), list(n.get_arguments()), n))
            elif n.kind == K.DECL_REF_EXPR:
                r = n.referenced
                if r is not None and r.kind == K.VAR_DECL and r.semantic_parent is not None \
                        and r.semantic_parent.kind == K.TRANSLATION_UNIT:
                    self.globals_used.append(r.type)
        self.pragmas = []

    def owner_loop(self, line):
        """The innermost loop whose body holds line, or None."""
        best = None
        for lp in self.loops:
            a, b = lp.body_lines
            if lp.real == self.real and a <= line <= b:
                if best is None or (b - a) <= (best.body_lines[1] - best.body_lines[0]):
                    best = lp
        return best

    def nested(self, loop):
        """Loops inside loop's body."""
        a, b = loop.body_offsets
        return [lp for lp in self.loops if lp is not loop and a <= lp.c.extent.start.offset < b]


class Unit:
    """One parsed DIR/*.c with the headers it includes from DIR."""

    def __init__(self, tu):
        self.tu = tu
        self.functions = []
        self.filescope = {}
        self.pragmas = []
        files = {tu.spelling}
        for inc in tu.get_includes():
            files.add(inc.include.name)
        for name in sorted(files):
            real = SRC.ours(name)
            if real:
                self.pragmas += file_pragmas(tu, real, name)
        self.pragmas += macro_pragmas(tu)
        self.macros = object_macros(tu)
        for c in tu.cursor.get_children():
            if c.kind == K.VAR_DECL:
                self.filescope[c.spelling] = c
            if c.kind == K.FUNCTION_DECL and c.is_definition() and where(c):
                self.functions.append(Function(c, self))
        for p in self.pragmas:
            f = self.function_at(p.real, p.line)
            p.function = f
            p.loop = f.owner_loop(p.line) if f else None
            if f:
                f.pragmas.append(p)

    def function_at(self, real, line):
        for f in self.functions:
            if f.real == real and f.lines[0] <= line <= f.lines[1]:
                return f
        return None

    def ours(self):
        """Every cursor of this unit that sits in a file under DIR."""
        for c in self.tu.cursor.get_children():
            if c.kind not in (K.MACRO_DEFINITION, K.MACRO_INSTANTIATION, K.INCLUSION_DIRECTIVE) and where(c):
                yield from walk(c)


# ------------------------------------------------------------------ rules ---


def is_ptr_to_ptr(t):
    """'pointer to pointer' / 'array of pointers' for a type, or None."""
    t = canon(t)
    if t.kind == T.POINTER:
        return "a pointer to pointer" if strip_arrays(t.get_pointee()).kind == T.POINTER else None
    if t.kind in ARRAY_KINDS:
        return "an array of pointers" if strip_arrays(t).kind == T.POINTER else None
    return None


def rule_pointer_to_pointer(units, rep):
    what = {K.VAR_DECL: "variable", K.PARM_DECL: "parameter", K.FIELD_DECL: "field",
            K.TYPEDEF_DECL: "typedef"}
    for u in units:
        for c in u.ours():
            if c.kind in what:
                t = c.underlying_typedef_type if c.kind == K.TYPEDEF_DECL else c.type
                kind = is_ptr_to_ptr(t)
                if kind:
                    rep.at(c, "pointer-to-pointer", "%s '%s' is %s (%s)"
                           % (what[c.kind], c.spelling, kind, t.spelling))
            elif c.kind == K.FUNCTION_DECL:
                kind = is_ptr_to_ptr(c.result_type)
                if kind:
                    rep.at(c, "pointer-to-pointer", "function '%s' returns %s (%s)"
                           % (c.spelling, kind, c.result_type.spelling))


def reachable(funcs, top):
    """Functions reachable from top in the call graph, breadth first."""
    start = [f for f in funcs.values() if f.name == top]
    order, seen = [], set()
    while start:
        f = start.pop(0)
        if f.usr in seen:
            continue
        seen.add(f.usr)
        order.append(f)
        start += [funcs[u] for u, _, _ in f.calls if u in funcs and u not in seen]
    return order


def rule_pointer_field(funcs, top, rep):
    seen = set()

    def visit(rec, user, path):
        usr = rec.get_declaration().get_usr() or rec.spelling
        if usr in seen:
            return
        seen.add(usr)
        name = record_name(rec)
        for fd in rec.get_fields():
            t = fd.type
            if strip_arrays(t).kind == T.POINTER:
                how = user if user == top else "%s, reachable from %s" % (user, top)
                inside = " (through %s)" % ", ".join(path) if path else ""
                rep.at(fd, "pointer-field", "field '%s.%s' is a pointer (%s); struct %s%s is used by %s"
                       % (name, fd.spelling, t.spelling, name, inside, how))
            sub = record_of(t)
            if sub is not None:
                visit(sub, user, path + ["%s.%s" % (name, fd.spelling)])

    for f in reachable(funcs, top):
        for t in f.var_types + f.globals_used:
            rec = record_of(t)
            if rec is not None:
                visit(rec, f.name, [])


def cast_operand(c):
    ks = kids(c)
    return ks[-1] if ks else None


def rule_pointer_cast(units, rep):
    for u in units:
        for c in u.ours():
            if c.kind != K.CSTYLE_CAST_EXPR:
                continue
            to = canon(c.type)
            op = cast_operand(c)
            if to.kind != T.POINTER or op is None:
                continue
            src = pointee_of(op.type)
            if src is None:
                continue
            if type_key(src) != type_key(to.get_pointee()):
                rep.at(c, "pointer-cast", "cast from %s * to %s (pointee types differ)"
                       % (plain(src), plain(c.type)))


def elem_type(e):
    """(canonical type, spelling) of the element an argument points to,
    seen under its implicit conversion to void * (arrays decay, and every
    array dimension of the pointee is dropped too), or (None, None)."""
    p = pointee_of(strip(e).type)
    if p is None:
        return None, None
    shown = p
    while canon(shown).kind in ARRAY_KINDS:
        shown = canon(shown).element_type
    return strip_arrays(p), plain(shown)


def rule_memcpy_type(units, rep):
    for u in units:
        for c in u.ours():
            if c.kind != K.CALL_EXPR or c.spelling not in ("memcpy", "memmove", "memset",
                                                           "__builtin_memcpy", "__builtin_memset"):
                continue
            args = list(c.get_arguments())
            if len(args) != 3:
                continue
            name = c.spelling.replace("__builtin_", "")
            dst, dst_name = elem_type(args[0])
            if name == "memset":
                val = strip(args[1])
                zero = val.kind == K.INTEGER_LITERAL and re.match(r"^0+[uUlL]*$", text(val) or "x")
                if dst is not None and dst.kind != T.VOID and dst.get_size() > 1 and not zero:
                    rep.at(c, "memcpy-type", "memset of %s elements with the byte value %s, not 0"
                           % (dst_name, text(args[1])))
                continue
            src, src_name = elem_type(args[1])
            if dst is None or src is None:
                continue
            if type_key(dst) != type_key(src):
                rep.at(c, "memcpy-type", "%s from %s to %s (element types differ)"
                       % (name, src_name, dst_name))


def is_wide_int(t):
    t = canon(t)
    return t.kind in INTEGER_KINDS and t.get_size() == 8


def rule_loop_index_64(units, rep):
    for u in units:
        for f in u.functions:
            for lp in f.loops:
                if lp.kind != K.FOR_STMT or lp.init is None:
                    continue
                names = []
                if lp.init.kind == K.DECL_STMT:
                    names = [(v.spelling, v.type) for v in kids(lp.init)
                             if v.kind == K.VAR_DECL and is_wide_int(v.type)]
                else:
                    for a in assignments(lp.init):
                        lhs = strip(kids(a)[0])
                        if lhs.kind == K.DECL_REF_EXPR and is_wide_int(lhs.type):
                            names.append((lhs.spelling, lhs.type))
                for n, t in names:
                    rep.at(lp.c, "loop-index-64", "loop variable '%s' is %s (8 bytes): use a"
                           " 32-bit index" % (n, t.spelling))


def rule_loop_tripcount(units, rep):
    for u in units:
        for f in u.functions:
            for lp in f.loops:
                if not lp.ok or lp.bound_constant():
                    continue
                inner = [n.c.extent.start.line for n in f.nested(lp)]
                stop = min(inner) if inner else lp.body_lines[1] + 1
                a = lp.body_lines[0]
                has = any(p.kind == "LOOP_TRIPCOUNT" and p.real == lp.real and a <= p.line < stop
                          for p in f.pragmas)
                if not has:
                    rep.at(lp.c, "loop-tripcount", "loop bound '%s' is not a constant and the body"
                           " has no LOOP_TRIPCOUNT (before any nested loop)" % lp.bound_text())


def rule_unroll_variable(units, rep):
    for u in units:
        for f in u.functions:
            for p in f.pragmas:
                if p.kind != "UNROLL" or "factor" in p.opts or p.opts.get("off", "") == "true" \
                        or "off" in p.flags or p.loop is None:
                    continue
                why = p.loop.variable_trip()
                if why:
                    via = " (from macro %s)" % p.macro if p.macro else ""
                    rep.add(p.real, p.line, "unroll-variable",
                            "UNROLL without factor=%s on the loop at line %d, whose trip count is not"
                            " a compile-time constant (%s)" % (via, p.loop.line, why))


def rule_pragma_name(units, rep):
    for u in units:
        for p in u.pragmas:
            for key in ("port", "variable"):
                if key not in p.opts:
                    continue
                name = p.opts[key]
                f = p.function
                parts = name.split(".")
                root = parts[0]
                if key == "port":
                    if name == "return":
                        continue
                    if f is None or root not in f.param_cursor:
                        rep.add(p.real, p.line, "pragma-name", "pragma names port '%s', which is not a"
                                " parameter of %s" % (name, f.name if f else "any function (file scope)"))
                        continue
                    decl = f.param_cursor[root]
                else:
                    decl = None
                    if f is not None:
                        decl = f.param_cursor.get(root) or f.local_cursor.get(root)
                    if decl is None:
                        decl = u.filescope.get(root)
                    if decl is None:
                        if f is not None:
                            msg = "pragma names '%s', which is not a parameter or local of %s nor a" \
                                  " file-scope variable" % (root, f.name)
                        else:
                            msg = "pragma names '%s', which is not a file-scope variable" % root
                        rep.add(p.real, p.line, "pragma-name", msg)
                        continue
                t = decl.type
                for part in parts[1:]:
                    rec = record_of(t)
                    if rec is None:
                        rep.add(p.real, p.line, "pragma-name", "pragma names '%s': '%s' is not a"
                                " field of a struct (%s)" % (name, part, t.spelling))
                        break
                    fd = field(rec, part)
                    if fd is None:
                        rep.add(p.real, p.line, "pragma-name", "pragma names '%s': '%s' is not a"
                                " field of struct %s" % (name, part, record_name(rec)))
                        break
                    t = fd.type


# Pragma options whose value is a number (UG1399 gives each as <int>).
NUMERIC_OPTS = {"ii", "factor", "depth", "distance", "limit", "min", "max", "avg", "dim",
                "latency", "max_read_burst_length", "max_write_burst_length",
                "num_read_outstanding", "num_write_outstanding", "max_widen_bitwidth"}


def literal_of(value, macros, seen=()):
    """The decimal literal a pragma value is, or names through object-like
    macros each of exactly one token; None for anything else (an
    expression, a cast, a suffix, an undefined name)."""
    if re.fullmatch(r"[0-9]+", value):
        return value
    if re.fullmatch(r"[A-Za-z_]\w*", value) and value in macros and value not in seen:
        body = macros[value]
        if len(body) == 1:
            return literal_of(body[0], macros, seen + (value,))
    return None


def expansion(value, macros, depth=0):
    """A macro's expansion for a message, a few levels deep."""
    toks = macros.get(value)
    if toks is None or depth > 3:
        return value
    return " ".join(expansion(t, macros, depth + 1) if t in macros else t for t in toks)


def rule_pragma_value(units, rep):
    for u in units:
        for p in u.pragmas:
            for key in sorted(p.opts):
                if key not in NUMERIC_OPTS:
                    continue
                v = p.opts[key]
                if literal_of(v, u.macros) is not None:
                    continue
                via = " (from macro %s)" % p.macro if p.macro else ""
                if v in u.macros:
                    why = "'%s' expands to '%s'" % (v, expansion(v, u.macros))
                elif re.fullmatch(r"[A-Za-z_]\w*", v):
                    why = "'%s' is not a macro" % v
                else:
                    why = "'%s' is an expression" % v
                rep.add(p.real, p.line, "pragma-value",
                        "%s %s=%s%s: %s; a pragma takes an integer literal or a macro naming one"
                        " (UG1399 \"Using #define with Pragma Directives\")"
                        % (p.kind, key, v, via, why))


def m_axi_pragmas(funcs):
    for f in funcs.values():
        for p in f.pragmas:
            if p.kind == "INTERFACE" and p.mode() == "m_axi":
                yield f, p


def rule_m_axi_depth(funcs, rep):
    for f, p in m_axi_pragmas(funcs):
        if "depth" not in p.opts:
            rep.add(p.real, p.line, "m-axi-depth", "INTERFACE m_axi port=%s has no depth="
                    % p.opts.get("port", "?"))


def rule_m_axi_volatile(funcs, rep):
    for f, p in m_axi_pragmas(funcs):
        port = p.opts.get("port")
        if "volatile" not in p.flags or port not in f.param_cursor:
            continue
        t = f.param_cursor[port].type
        pt = pointee_of(t)
        if pt is None or not pt.is_volatile_qualified():
            rep.add(p.real, p.line, "m-axi-volatile", "pragma says volatile but parameter '%s' is"
                    " %s: declare it volatile" % (port, t.spelling))


def root_param(e, f, tracked):
    """The tracked parameter of f an argument expression passes on (p,
    p + k, &p[k], (T *)p), or None."""
    e = strip(e)
    if e is None:
        return None
    if e.kind == K.DECL_REF_EXPR:
        r = e.referenced
        if r is not None and r.kind == K.PARM_DECL and (f.usr, r.spelling) in tracked:
            return r.spelling
        return None
    if e.kind == K.BINARY_OPERATOR and canon(e.type).kind == T.POINTER and binop(e) in ("+", "-"):
        for k in kids(e):
            if canon(k.type).kind == T.POINTER:
                return root_param(k, f, tracked)
    if e.kind == K.UNARY_OPERATOR and unop(e) == "&":
        k = strip(kids(e)[0])
        if k.kind == K.ARRAY_SUBSCRIPT_EXPR:
            return root_param(kids(k)[0], f, tracked)
    if e.kind == K.CSTYLE_CAST_EXPR and canon(e.type).kind == T.POINTER:
        return root_param(cast_operand(e), f, tracked)
    return None


def m_axi_tracked(funcs):
    """The m_axi pointers and every parameter they reach down the call graph:
    (tracked, a set of (function usr, parameter); origin, each one's (port,
    top function))."""
    tracked, origin, work = set(), {}, []
    for f, p in m_axi_pragmas(funcs):
        port = p.opts.get("port")
        if port in f.param_cursor:
            key = (f.usr, port)
            if key not in tracked:
                tracked.add(key)
                origin[key] = (port, f.name)
                work.append(f)
    # follow each m_axi pointer down the call graph, parameter by parameter
    while work:
        f = work.pop()
        for usr, args, _ in f.calls:
            g = funcs.get(usr)
            if g is None:
                continue
            for i, a in enumerate(args):
                name = root_param(a, f, tracked)
                if name is None or i >= len(g.params):
                    continue
                key = (g.usr, g.params[i])
                if key not in tracked:
                    tracked.add(key)
                    origin[key] = origin[(f.usr, name)]
                    work.append(g)
    return tracked, origin


def null_test_operands(n):
    """The operands node n tests for truth or compares with a constant (the
    places a NULL test sits): (operand, needs an ICE on the other side)."""
    if n.kind == K.BINARY_OPERATOR:
        op, ks = binop(n), kids(n)
        if op in ("==", "!="):
            return [(a, b) for a, b in ((ks[0], ks[1]), (ks[1], ks[0]))]
        if op in ("&&", "||"):
            return [(k, None) for k in ks]
        return []
    if n.kind == K.UNARY_OPERATOR and unop(n) == "!":
        return [(kids(n)[0], None)]
    if n.kind in (K.IF_STMT, K.WHILE_STMT, K.CONDITIONAL_OPERATOR):
        ks = kids(n)
        return [(ks[0], None)] if ks else []
    if n.kind == K.FOR_STMT:
        lp = Loop(n)
        return [(lp.cond, None)] if lp.cond is not None else []
    if n.kind == K.DO_STMT:
        ks = kids(n)
        return [(ks[1], None)] if len(ks) == 2 else []
    return []


def rule_m_axi_null_test(funcs, rep):
    tracked, origin = m_axi_tracked(funcs)

    def tested(e, f):
        e = strip(e)
        if e is not None and e.kind == K.DECL_REF_EXPR and canon(e.type).kind == T.POINTER:
            return root_param(e, f, tracked)
        return None

    for f in funcs.values():
        if not any(k[0] == f.usr for k in tracked):
            continue
        for n in walk(f.c):
            hits = [tested(a, f) for a, other in null_test_operands(n)
                    if other is None or (tested(a, f) and is_ice(strip_casts(other)))]
            for name in hits:
                if name:
                    port, top = origin[(f.usr, name)]
                    via = "" if (name, f.name) == (port, top) else \
                        ", parameter '%s' of %s" % (name, f.name)
                    rep.at(n, "m-axi-null-test", "'%s' (m_axi port of %s%s) is tested against NULL"
                           % (port, top, via))


def strip_casts(e):
    e = strip(e)
    while e is not None and e.kind == K.CSTYLE_CAST_EXPR:
        e = strip(cast_operand(e))
    return e


def pipelined(p):
    return p.kind == "PIPELINE" and "off" not in p.flags and p.opts.get("off", "false") != "true"


def rule_pipeline_divide(units, rep):
    for u in units:
        for f in u.functions:
            whole = any(pipelined(p) and p.loop is None for p in f.pragmas)
            regions = [p.loop.body_offsets for p in f.pragmas if pipelined(p) and p.loop is not None]
            if not whole and not regions:
                continue
            for n in walk(f.c):
                if n.kind not in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR):
                    continue
                op = binop(n)
                if op not in ("/", "%", "/=", "%="):
                    continue
                ks = kids(n)
                if canon(ks[0].type).kind not in INTEGER_KINDS or canon(ks[1].type).kind not in INTEGER_KINDS:
                    continue
                if is_ice(ks[1]):
                    continue
                off = n.extent.start.offset
                if whole or any(a <= off < b for a, b in regions):
                    rep.at(n, "pipeline-divide", "run-time %s by '%s' in a PIPELINE region of %s"
                           % ("division" if op[0] == "/" else "modulo", text(ks[1]), f.name))


# ------------------------------------------------- storage and the calls ---

PARTITIONS = ("ARRAY_PARTITION", "ARRAY_RESHAPE")
COMPLETE_THRESHOLD = 4   # UG1399 config_array_partition -complete_threshold, default


def pragmas_on(f, name, kinds):
    return [p for p in f.pragmas if p.kind in kinds and p.opts.get("variable") == name
            and "off" not in p.flags and p.opts.get("off", "false") != "true"]


def inlined(f):
    """Whether f carries `#pragma HLS INLINE` (not `INLINE off`)."""
    return any(p.kind == "INLINE" and p.loop is None and "off" not in p.flags
               and p.opts.get("off", "false") != "true" for p in f.pragmas)


def callers_of(funcs):
    """{callee usr: [(caller Function, [argument cursors], call cursor)]}."""
    out = {}
    for f in funcs.values():
        for usr, args, call in f.calls:
            out.setdefault(usr, []).append((f, args, call))
    return out


def arg_root(e):
    """(variable name, how) of what an argument passes: how is 'whole' for
    x, &x, (T *)x; 'part' for x[i] (a sub-array or an element); 'member'
    when the path goes through a struct member (s->m, s.m[i]); (None, None)
    for anything else."""
    how = "whole"
    e = strip(e)
    while e is not None:
        if e.kind == K.DECL_REF_EXPR:
            return e.spelling, how
        if e.kind == K.UNARY_OPERATOR and unop(e) == "&":
            e = strip(kids(e)[0])
        elif e.kind == K.CSTYLE_CAST_EXPR:
            e = strip(cast_operand(e))
        elif e.kind == K.ARRAY_SUBSCRIPT_EXPR:
            how = "member" if how == "member" else "part"
            e = strip(kids(e)[0])
        elif e.kind == K.MEMBER_REF_EXPR:
            how = "member"
            ks = kids(e)
            e = strip(ks[0]) if ks else None
        else:
            return None, None
    return None, None


def arg_path(e):
    """(variable name, steps) of what an argument passes, the steps from the
    variable outwards: ('m', member), ('i', index cursor) for a subscript or
    ('i', None) for a dereference; &x and casts add none.  (None, None) for
    anything else."""
    steps = []
    e = strip(e)
    while e is not None:
        if e.kind == K.DECL_REF_EXPR:
            return e.spelling, steps[::-1]
        if e.kind == K.UNARY_OPERATOR and unop(e) == "&":
            e = strip(kids(e)[0])
        elif e.kind == K.UNARY_OPERATOR and unop(e) == "*":
            steps.append(("i", None))
            e = strip(kids(e)[0])
        elif e.kind == K.CSTYLE_CAST_EXPR:
            e = strip(cast_operand(e))
        elif e.kind == K.ARRAY_SUBSCRIPT_EXPR:
            steps.append(("i", kids(e)[1]))
            e = strip(kids(e)[0])
        elif e.kind == K.MEMBER_REF_EXPR:
            steps.append(("m", e.spelling))
            ks = kids(e)
            e = strip(ks[0]) if ks else None
        else:
            return None, None
    return None, None


def resolved_here(steps, members, dim, ndims):
    """Whether an argument with these steps indexes the partitioned
    dimension of the member path `members` before the call ('here'), passes
    the array on with that dimension still to index ('crosses'), or passes
    something else ('other'); and for 'here' with dim > 0, the position in
    steps of the subscript that picks among the partitions (else None)."""
    i = 0
    for name in members:
        while i < len(steps) and steps[i][0] == "i":
            i += 1
        if i == len(steps):
            return "crosses", None      # the struct (or an outer one) goes whole
        if steps[i] != ("m", name):
            return "other", None
        i += 1
    k = 0
    while i + k < len(steps) and steps[i + k][0] == "i":
        k += 1
    need = ndims if dim == 0 else dim
    if k < need:
        return "crosses", None
    return "here", (i + dim - 1 if dim > 0 else None)


def decl_key(c):
    """A declaration's identity (two locals may share a name)."""
    return (c.hash, c.spelling)


def unrolled_variables(f, call):
    """Declarations that are compile-time constants in each copy of the
    loops around call that are fully unrolled (UNROLL without factor):
    their induction variables."""
    out = set()
    off = call.extent.start.offset
    for p in f.pragmas:
        lp = p.loop
        if p.kind != "UNROLL" or lp is None or "factor" in p.opts or "off" in p.flags:
            continue
        a, b = lp.body_offsets
        if a <= off <= b and lp.kind == K.FOR_STMT and lp.init is not None:
            if lp.init.kind == K.DECL_STMT:
                out |= {decl_key(v) for v in kids(lp.init) if v.kind == K.VAR_DECL}
            else:
                for x in assignments(lp.init):
                    t = strip(kids(x)[0])
                    if t is not None and t.kind == K.DECL_REF_EXPR and t.referenced is not None:
                        out.add(decl_key(t.referenced))
    return out


ASSIGNED = {}


def assigned_decls(f):
    """Declarations f assigns after declaring them (=, op=, ++, --)."""
    if f.usr in ASSIGNED:
        return ASSIGNED[f.usr]
    out = set()
    for n in walk(f.c):
        target = None
        if n.kind in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR) and binop(n) in ASSIGN:
            target = kids(n)[0]
        elif n.kind == K.UNARY_OPERATOR and unop(n) in ("++", "--"):
            target = kids(n)[0]
        t = strip(target) if target is not None else None
        if t is not None and t.kind == K.DECL_REF_EXPR and t.referenced is not None:
            out.add(decl_key(t.referenced))
    ASSIGNED[f.usr] = out
    return out


def is_constant_in(c, keys):
    """An expression whose value is fixed in each copy of the hardware: an
    integer constant expression whose variables may also be the
    declarations in keys (unrolled loop variables, parameters bound to such
    values, locals set once from them)."""
    return is_ice(c, keys)


def constant_names(f, call, bound):
    """Declarations constant at call in f: the parameters bound to
    constants by f's callers along the inlined chain (bound), the unrolled
    loops' variables, and locals declared from those and never assigned
    again."""
    memo = (f.usr, call.hash, bound)
    if memo in CONSTANTS:
        return CONSTANTS[memo]
    keys = set(bound) | unrolled_variables(f, call)
    assigned = assigned_decls(f) - keys
    grown = True
    while grown:
        grown = False
        for kv, init in initialized_decls(f):
            if kv in keys or kv in assigned:
                continue
            if is_constant_in(init, keys):
                keys.add(kv)
                grown = True
    CONSTANTS[memo] = keys
    return keys


CONSTANTS = {}
DECLS = {}


def initialized_decls(f):
    """[(key, initializer)] of f's local declarations that have one."""
    if f.usr not in DECLS:
        out = []
        for v in walk(f.c):
            if v.kind == K.VAR_DECL:
                init = [x for x in kids(v) if x.kind not in (K.TYPE_REF, K.STRUCT_DECL)]
                if init:
                    out.append((decl_key(v), init[-1]))
        DECLS[f.usr] = out
    return DECLS[f.usr]


def dims_of(t):
    """Array dimensions of a declared type, outermost first; a parameter's
    decayed first dimension is None."""
    t = canon(t)
    dims = []
    if t.kind == T.POINTER:
        dims.append(None)
        t = canon(t.get_pointee())
    while t.kind == T.CONSTANTARRAY:
        dims.append(t.element_count)
        t = canon(t.element_type)
    return dims


def storage(f, name, units_of, callers, seen=()):
    """('registers', why), ('memory', why) or ('unknown', why) for variable
    `name` of f, from its partitions, its binding and the complete
    threshold; a parameter without pragmas of its own is what its callers
    pass (every caller that can be followed)."""
    decl = f.local_cursor.get(name) or f.param_cursor.get(name)
    if decl is None or (f.usr, name) in seen:
        return "unknown", ""
    seen = seen + ((f.usr, name),)
    dims = dims_of(decl.type)
    if not dims:
        return "registers", "'%s' is a scalar" % name
    parts = pragmas_on(f, name, PARTITIONS)
    binds = pragmas_on(f, name, ("BIND_STORAGE",))
    if name in f.param_cursor:
        # what the callers pass decides (a binding sits where the array is
        # defined); the parameter's own pragmas only when no caller tells
        i = f.params.index(name)
        found = "unknown", ""
        for g, args, call in callers.get(f.usr, []):
            if i >= len(args):
                continue
            root, how = arg_root(args[i])
            if root is None or how != "whole":
                continue
            k, why = storage(g, root, units_of, callers, seen)
            if k == "registers":
                return k, "%s (passed by %s at line %d)" % (why, g.name, call.location.line)
            if k == "memory":
                found = k, why
        if found[0] != "unknown" or (not parts and not binds):
            return found
    macros = units_of[f.usr].macros
    bank = 1
    for d, n in enumerate(dims, 1):
        words = n
        for p in parts:
            pd = literal_of(p.opts.get("dim", "1"), macros)
            if pd is None or int(pd) not in (0, d):
                continue
            kind = p.opts.get("type", "complete").lower()
            if kind == "complete":
                words = 1
            else:
                fac = literal_of(p.opts.get("factor", "1"), macros)
                if fac and int(fac) > 0 and words is not None:
                    words = -(-words // int(fac))
        if words is None:
            return "memory", "a parameter's leading dimension"
        bank *= words
    if bank == 1:
        return "registers", "'%s' is partitioned completely in every dimension" % name
    if not binds and bank < COMPLETE_THRESHOLD:
        return "registers", ("each bank of '%s' holds %d elements, fewer than the complete_threshold"
                             " of %d, and no BIND_STORAGE keeps it a memory" % (name, bank, COMPLETE_THRESHOLD))
    return "memory", "banks of %d elements" % bank


def rule_dependence_register(units, funcs, rep):
    units_of = {f.usr: u for u in units for f in u.functions}
    callers = callers_of(funcs)
    for f in funcs.values():
        for p in f.pragmas:
            if p.kind != "DEPENDENCE" or "variable" not in p.opts:
                continue
            k, why = storage(f, p.opts["variable"], units_of, callers)
            if k == "registers":
                rep.add(p.real, p.line, "dependence-register",
                        "DEPENDENCE variable=%s claims a distance on registers: %s; UG1399 \"pragma HLS"
                        " dependence\" speaks of arrays (memories), and a recurrence through registers"
                        " keeps the adder's latency as its II: bind the accumulator to a memory"
                        " (BIND_STORAGE, banks of %d or more) or make the distance a register chain"
                        % (p.opts["variable"], why, COMPLETE_THRESHOLD))


def member_dims(f, root, members):
    """Array dimensions of root.members[...] as declared (for dim=0)."""
    t = (f.local_cursor.get(root) or f.param_cursor[root]).type
    for name in members:
        rec = record_of(t)
        fd = field(rec, name) if rec is not None else None
        if fd is None:
            return 1
        t = fd.type
    return max(1, len(dims_of(t)))


def follow_partition(funcs, f, p, root, members, dim, ndims):
    """Where the partition pragma p of f's root.members reaches its array:
    f's calls and on through inlined callees.  Returns (crossed, picks):
    the non-inlined calls it crosses into without a partition of their own
    (callee, call, why), and those that get one partition picked at run
    time (callee, call, (False, the picking call, its function, index))."""
    picks = []
    # where the array goes: f's calls, and on through inlined callees;
    # a work item also carries the parameters bound to constants and,
    # once the partitioned dimension is indexed, how: (constant?,
    # call, function, index)
    work, visited, crossed = [(f, root, [], frozenset(), None)], set(), []
    while work:
        g, name, prefix, bound, pick = work.pop()
        key = (g.usr, name, bound, None if pick is None else pick[0])
        if key in visited:
            continue
        visited.add(key)
        for usr, args, call in g.calls:
            h = funcs.get(usr)
            if h is None:
                continue
            consts = None
            for i, a in enumerate(args):
                r, own = arg_path(a)
                if r != name or i >= len(h.params):
                    continue
                steps = prefix + own
                where, at = resolved_here(steps, members, dim, ndims)
                if where == "other":
                    continue
                if consts is None and (inlined(h) or where == "here"):
                    consts = constant_names(g, call, bound)
                    hargs = list(h.c.get_arguments())
                    hbound = frozenset(decl_key(hargs[j]) for j, x in enumerate(args)
                                       if j < len(hargs) and is_constant_in(x, consts))
                if where == "here":
                    this = pick
                    if at is not None and at >= len(prefix) and p.kind == "ARRAY_PARTITION":
                        idx = steps[at][1]
                        this = (idx is not None and is_constant_in(idx, consts), call, g, idx)
                    if this is None or this[0]:
                        continue        # picked by a constant: one partition a copy
                    if inlined(h):
                        work.append((h, h.params[i], steps, hbound, this))
                    else:
                        picks.append((h, call, this))
                    continue
                if inlined(h):
                    work.append((h, h.params[i], steps, hbound, pick))
                elif len([st for st in steps if st[0] == "m"]) < len(members):
                    crossed.append((h, call, "the struct '%s' reaches it by pointer" % root))
                elif not pragmas_on(h, h.params[i], PARTITIONS):
                    crossed.append((h, call, "its parameter '%s' states no partition of its own"
                                    % h.params[i]))
    return crossed, picks


def rule_partition_call(funcs, rep):
    for f in funcs.values():
        macros = None
        for p in f.pragmas:
            if p.kind not in PARTITIONS or "variable" not in p.opts:
                continue
            if "off" in p.flags or p.opts.get("off", "false") == "true":
                continue
            var = p.opts["variable"]
            parts = var.split(".")
            root, members = parts[0], parts[1:]
            if root not in f.local_cursor and root not in f.param_cursor:
                continue
            if macros is None:
                macros = f.unit.macros
            dim = int(literal_of(p.opts.get("dim", "1"), macros) or "1")
            ndims = member_dims(f, root, members)
            crossed, picks = follow_partition(funcs, f, p, root, members, dim, ndims)
            for h, call, (ok, pcall, pg, idx) in picks:
                rep.add(p.real, p.line, "partition-pick",
                        "%s of '%s' in %s: the non-inlined %s (line %d) gets one partition picked"
                        " by '%s' in %s (line %d), a value known only at run time; one instance of"
                        " %s serves every pick, so HLS must give it all the partitions behind a mux"
                        " or undo the split (UG1399 \"pragma HLS array_partition\", \"pragma HLS"
                        " inline\").  Inline %s, or pick with a constant (an unrolled loop's"
                        " variable)" % (p.kind, var, f.name, h.name, call.location.line,
                                        text(idx) if idx is not None else "*", pg.name,
                                        pcall.location.line, h.name, h.name))
            if not crossed:
                continue
            h, call, why = crossed[0]
            more = sorted(set(c[0].name for c in crossed[1:]) - {h.name})
            rep.add(p.real, p.line, "partition-call",
                    "%s of '%s' in %s reaches its accesses only through the non-inlined call to %s"
                    " (line %d)%s: %s.  UG1399 \"pragma HLS array_partition\": the pragma goes in the"
                    " function where the array is defined; partition where the loop is (state it on"
                    " the callee's parameter, or inline the call)"
                    % (p.kind, var, f.name, h.name, call.location.line,
                       " and to %s" % ", ".join(more) if more else "", why))


# ------------------------------------------------------------------- main ---


def parse_args(argv):
    defs, top, rest = [], "tessera_top", []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-D", "-U", "--top"):
            if i + 1 >= len(argv):
                return None
            if a == "--top":
                top = argv[i + 1]
            else:
                defs.append(a + argv[i + 1])
            i += 2
            continue
        if a.startswith("-D") or a.startswith("-U"):
            defs.append(a)
        elif a.startswith("--top="):
            top = a[6:]
        elif a.startswith("-"):
            return None
        else:
            rest.append(a)
        i += 1
    if len(rest) != 1:
        return None
    return defs, top, rest[0]


def main(argv):
    global ci, K, T, SRC, INTEGER_KINDS, ARRAY_KINDS
    if argv == ["--list-rules"]:
        for name, what in RULES:
            print("%-20s %s" % (name, what))
        return 0
    args = parse_args(argv)
    if args is None:
        sys.stderr.write(USAGE + "\n")
        return 2
    defs, top, d = args
    if not os.path.isdir(d):
        sys.stderr.write("lint-hls: usage: %s (no such directory: '%s')\n" % (USAGE, d))
        return 2
    sources = sorted(glob.glob(os.path.join(d, "*.c")))
    if not sources:
        print("lint-hls-clang: %s: no .c files to check" % d)
        return 1

    ci = load_clang()
    K, T = ci.CursorKind, ci.TypeKind
    import ctypes

    class RangeList(ctypes.Structure):
        _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(ci.SourceRange))]

    lib = ci.conf.lib
    lib.clang_getSkippedRanges.argtypes = [ci.TranslationUnit, ci.File]
    lib.clang_getSkippedRanges.restype = ctypes.POINTER(RangeList)
    lib.clang_disposeSourceRangeList.argtypes = [ctypes.POINTER(RangeList)]
    INTEGER_KINDS = {T.BOOL, T.CHAR_U, T.UCHAR, T.CHAR16, T.CHAR32, T.USHORT, T.UINT, T.ULONG,
                     T.ULONGLONG, T.UINT128, T.CHAR_S, T.SCHAR, T.WCHAR, T.SHORT, T.INT, T.LONG,
                     T.LONGLONG, T.INT128, T.ENUM}
    ARRAY_KINDS = {T.CONSTANTARRAY, T.INCOMPLETEARRAY, T.VARIABLEARRAY, T.DEPENDENTSIZEDARRAY}
    SRC = Source(d)

    flags = ["-std=c99", "-D__SYNTHESIS__", "-I" + d, "-I" + os.path.join(d, "profiles")] + defs
    index = ci.Index.create()
    rep = Report()
    units = []
    for path in sources:
        tu = index.parse(path, args=flags,
                         options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
        for dg in tu.diagnostics:
            if dg.severity >= ci.Diagnostic.Error:
                loc = dg.location
                real = SRC.ours(loc.file.name) if loc.file else None
                if real:
                    rep.add(real, loc.line, "parse", dg.spelling)
                else:
                    rep.add(os.path.realpath(path), 0, "parse", dg.spelling)
        units.append(Unit(tu))

    funcs = {}
    for u in units:
        for f in u.functions:
            funcs.setdefault(f.usr, f)

    rule_pointer_to_pointer(units, rep)
    rule_pointer_field(funcs, top, rep)
    rule_pointer_cast(units, rep)
    rule_memcpy_type(units, rep)
    rule_loop_index_64(units, rep)
    rule_loop_tripcount(units, rep)
    rule_unroll_variable(units, rep)
    rule_pragma_name(units, rep)
    rule_m_axi_depth(funcs, rep)
    rule_m_axi_null_test(funcs, rep)
    rule_m_axi_volatile(funcs, rep)
    rule_pipeline_divide(units, rep)
    rule_pragma_value(units, rep)
    rule_dependence_register(units, funcs, rep)
    rule_partition_call(funcs, rep)

    lines = rep.lines()
    for line in lines:
        print(line)
    if lines:
        print("lint-hls-clang: %d problem(s) in %d files" % (len(lines), len(sources)))
        return 1
    print("lint-hls-clang: %d files OK" % len(sources))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
