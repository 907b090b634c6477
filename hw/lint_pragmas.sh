#!/bin/sh
# hw/lint_pragmas.sh - check that every `#pragma HLS` naming `variable=` or
# `port=` names something that exists where the pragma sits, because Vitis
# HLS only warns about (and then ignores) a pragma on a missing name: a typo
# silently drops an ARRAY_PARTITION or an INTERFACE bundle.
#
# usage: sh hw/lint_pragmas.sh DIR     (`make lint-hls` runs it on kernels/)
#
# Rules, per pragma found in DIR/*.c or DIR/*.h:
#   port=P       P is a parameter of the enclosing function, or `return`.
#   variable=V   V is a parameter or a local of the enclosing function, or a
#                file-scope variable.  A member path V=a.b.c (a static
#                struct that Vitis HLS disaggregates) needs the root `a` as
#                above and every later part to be a member of some struct.
# A pragma outside any function is checked against file scope.
#
# How: every DIR/*.c is run through the C preprocessor with the synthesis
# view (-D__SYNTHESIS__, as hw/lint_hls.sh), so macros that declare
# members (TSR_PE_ARRAY_DECL) are expanded and #ifdef'd pragmas are seen as
# Vitis sees them; line markers map back to the original file:line.  An awk
# scanner then tracks braces, functions, parameters and declarations.  It is
# a scanner for our kernel subset, not a C parser: a declaration is a
# statement that starts with a type (a C type keyword or a typedef name).
#
# Output: one line per problem,
#   lint-pragmas: FILE:LINE: pragma names 'x' which is not in function f
# and "lint-pragmas: N pragmas in M files OK" when there is none.  Exit 1
# on any problem, 2 on bad usage.  POSIX sh, cc, awk.

set -u

dir=${1:-}
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "lint-pragmas: usage: sh hw/lint_pragmas.sh DIR (no such directory: '${dir}')" >&2
    exit 2
fi
dir=${dir%/}
CC=${CC:-cc}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lint_pragmas.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM HUP

# ---------------------------------------------------------- preprocess ---
# One stream: "#tsr-unit SRC" then SRC's preprocessed text, per .c file.
nfiles=0
: > "$tmp/all.i"
for src in "$dir"/*.c; do
    [ -f "$src" ] || continue
    nfiles=$((nfiles + 1))
    echo "#tsr-unit $src" >> "$tmp/all.i"
    if ! $CC -std=c99 -E -D__SYNTHESIS__ -I"$dir" -I"$dir/profiles" "$src" \
            >> "$tmp/all.i" 2> "$tmp/err"; then
        sed 's/^/    /' "$tmp/err"
        echo "lint-pragmas: $src: does not preprocess (see above)"
        exit 1
    fi
done
if [ "$nfiles" -eq 0 ]; then
    echo "lint-pragmas: $dir: no .c files to check"
    exit 1
fi

# ------------------------------------------------------------- scanner ---
awk -v dir="$dir" -v nfiles="$nfiles" -v Q="'" '
function reset_unit() {
    depth = 0; paren = 0; infn = 0; fname = ""; nst = 0; initb = 0
    split("", filescope); split("", typedefs); split("", locals); split("", params)
    nfpr = 0; ngpr = 0
    split("", aggstack); aggtop = 0; pending_td = 0
    # the C type keywords that can start a declaration
    n = split("void char short int long float double signed unsigned _Bool", kw, " ")
    for (i = 1; i <= n; i++) typedefs[kw[i]] = 1
}
BEGIN {
    n = split("static const volatile extern inline register restrict __restrict " \
              "__restrict__ __inline __inline__ __extension__ _Noreturn auto", q, " ")
    for (i = 1; i <= n; i++) qual[q[i]] = 1
    problems = 0; checked = 0
    reset_unit()
}
function is_ident(t) { return t ~ /^[A-Za-z_][A-Za-z0-9_]*$/ }
# Record the names a declaration statement st[a..b] declares into set
# (1 locals, 2 file scope, 3 struct members).
function declare(a, b, where,    i, t, lvl, want, isdecl) {
    i = a
    while (i <= b && (st[i] in qual)) i++
    if (i > b) return
    t = st[i]
    if (t == "typedef") return
    if (t == "struct" || t == "union" || t == "enum") {
        i++
        if (i <= b && is_ident(st[i])) i++
    } else if (t in typedefs) {
        i++
        while (i <= b && ((st[i] in typedefs) || (st[i] in qual))) i++   # unsigned int
    } else return
    # declarators: the first identifier of each comma-separated part
    want = 1; lvl = 0
    for (; i <= b; i++) {
        t = st[i]
        if (t == "(" || t == "[" || t == "{") { lvl++; continue }
        if (t == ")" || t == "]" || t == "}") { lvl--; continue }
        if (lvl == 0 && t == ",") { want = 1; continue }
        if (lvl == 0 && t == "=") { want = 0; continue }
        if (want && is_ident(t) && !(t in qual) && t != "__attribute__") {
            if (where == 1) locals[t] = 1
            else if (where == 2) filescope[t] = 1
            else members[t] = 1
            want = 0
        }
    }
}
# A typedef statement st[1..nst] (after its braces, if any): the new name.
function typedef_name(    i) {
    for (i = 1; i <= nst; i++)               # typedef int (*name)(...)
        if (st[i] == "(" && st[i + 1] == "*" && is_ident(st[i + 2])) { typedefs[st[i + 2]] = 1; return }
    for (i = nst; i >= 1; i--)
        if (is_ident(st[i]) && st[i] != "__attribute__") { typedefs[st[i]] = 1; return }
}
# Start of a function body: st[] holds its declaration.  The name is the
# identifier before the first "("; each parameter is the last identifier of
# its comma-separated part at parenthesis level 1 (array bounds skipped).
function start_function(    i, j, lvl, last) {
    fname = ""
    for (i = 1; i <= nst; i++) if (st[i] == "(") { fname = st[i - 1]; break }
    split("", params); split("", locals)
    lvl = 1; last = ""
    for (j = i + 1; j <= nst; j++) {
        if (st[j] == "(" || st[j] == "[") { lvl++; continue }
        if (st[j] == ")" || st[j] == "]") {
            lvl--
            if (lvl == 0) { if (last != "") params[last] = 1; break }
            continue
        }
        if (lvl != 1) continue
        if (st[j] == ",") { if (last != "") params[last] = 1; last = ""; continue }
        if (is_ident(st[j]) && !(st[j] in qual) && !(st[j] in typedefs) &&
            st[j] != "struct" && st[j] != "union" && st[j] != "enum") last = st[j]
    }
    infn = 1; nfpr = 0
}
# Check one pragma (fields p_*[k]) against the current scope.
function check(file, line, kind, name, where,    root, parts, np, i, ok) {
    checked++
    if (kind == "port") {
        ok = (name == "return") || (where != "" && (name in params))
        if (!ok) report(file, line, "pragma names port " Q "" name "" Q " which is not a parameter of function " where)
        return
    }
    np = split(name, parts, ".")
    root = parts[1]
    ok = (root in filescope) || (where != "" && ((root in params) || (root in locals)))
    if (!ok) {
        if (where != "") report(file, line, "pragma names " Q "" root "" Q " which is not in function " where)
        else report(file, line, "pragma names " Q "" root "" Q " which is not at file scope")
        return
    }
    for (i = 2; i <= np; i++)
        if (!(parts[i] in members))
            report(file, line, "pragma names " Q "" name "" Q ": " Q "" parts[i] "" Q " is not a member of any struct")
}
function report(file, line, msg,    key) {
    key = file ":" line ": " msg
    if (key in told) return
    told[key] = 1; problems++
    print "lint-pragmas: " key
}
# The pragmas queued in this function, checked at its closing brace (a
# pragma may precede the declaration it names).
function end_function(    k) {
    for (k = 1; k <= nfpr; k++) check(fpf[k], fpl[k], fpk[k], fpn[k], fname)
    infn = 0; fname = ""; split("", locals); split("", params)
}
function token(t,    i) {
    if (initb > 0) {                         # inside a brace initializer
        if (t == "{") initb++
        else if (t == "}") initb--
        return
    }
    if (t == "(") paren++
    if (t == ")") paren--
    if (t == "{") {
        haseq = 0; hasparen = 0
        for (i = 1; i <= nst; i++) { if (st[i] == "=") haseq = 1; if (st[i] == "(") hasparen = 1 }
        if (haseq) { initb = 1; return }     # x = { ... }: keep the statement
        if (depth == 0 && hasparen && st[1] != "typedef") { start_function(); depth++; nst = 0; return }
        if (st[1] == "typedef" || st[1] == "struct" || st[1] == "union" || st[1] == "enum" ||
            (nst >= 2 && (st[nst - 1] == "struct" || st[nst - 1] == "union" || st[nst] == "struct" || st[nst] == "union"))) {
            agg = (st[1] == "enum" || st[2] == "enum") ? "enum" : "struct"
            aggstack[++aggtop] = agg; aggtd[aggtop] = (st[1] == "typedef")
            aggsave[aggtop] = join_st()
        } else aggstack[++aggtop] = "block"
        depth++; nst = 0; return
    }
    if (t == "}") {
        depth--
        if (aggtop > 0) {
            agg = aggstack[aggtop]; td = aggtd[aggtop]; saved = aggsave[aggtop]; aggtop--
            if (agg != "block") {            # struct {...} name; continues
                nst = split(saved, st, SUBSEP)
                st[++nst] = "{"; st[++nst] = "}"
                if (td) pending_td = 1
                return
            }
        }
        if (depth == 0 && infn) end_function()
        nst = 0; return
    }
    if (t == ";" ) {
        if (paren > 0 && st[1] == "for" && st[2] == "(") {   # for (int i = 0; ...
            declare(3, nst, 1); nst = 0; st[++nst] = "for"; st[++nst] = "("; st[++nst] = "..."
            return
        }
        if (paren > 0) { return }
        if (st[1] == "typedef" || (st[1] in qual && st[2] == "typedef") || pending_td) {
            typedef_name(); pending_td = 0
        }
        else {
            where = (aggtop > 0 && aggstack[aggtop] == "struct") ? 3 : (infn ? 1 : 2)
            if (!(aggtop > 0 && aggstack[aggtop] == "enum")) declare(1, nst, where)
        }
        nst = 0; return
    }
    if (t == ":" && nst == 1 && paren == 0 && !(aggtop > 0 && aggstack[aggtop] == "struct")) { nst = 0; return } # label
    st[++nst] = t
}
function join_st(    i, s) { s = ""; for (i = 1; i <= nst; i++) s = s (i > 1 ? SUBSEP : "") st[i]; return s }
# -------------------------------------------------------------- input --
/^#tsr-unit / {
    if (infn) end_function()
    for (k = 1; k <= ngpr; k++) check(gpf[k], gpl[k], gpk[k], gpn[k], "")
    reset_unit(); cfile = $2; cline = 0; next
}
/^# [0-9]+ "/ {                              # line marker: # N "file" flags
    cline = $2 - 1; cfile = $3; gsub(/"/, "", cfile); next
}
{ cline++ }
/^[ \t]*#[ \t]*pragma[ \t]+HLS[ \t]/ {
    # only our own sources (a pragma inside a system header is not ours)
    if (index(cfile, dir "/") != 1) next
    nf = split($0, w, /[ \t]+/)
    for (i = 1; i <= nf; i++) {
        if (w[i] ~ /^(variable|port)=/) {
            kind = substr(w[i], 1, index(w[i], "=") - 1)
            name = substr(w[i], index(w[i], "=") + 1)
            if (infn) { nfpr++; fpf[nfpr] = cfile; fpl[nfpr] = cline; fpk[nfpr] = kind; fpn[nfpr] = name }
            else { ngpr++; gpf[ngpr] = cfile; gpl[ngpr] = cline; gpk[ngpr] = kind; gpn[ngpr] = name }
        }
    }
    next
}
/^[ \t]*#/ { next }
{
    line = $0
    gsub(/"([^"\\]|\\.)*"/, " \"s\" ", line)     # string and char literals
    gsub(/\047([^\047\\]|\\.)*\047/, " 0 ", line)
    gsub(/->/, " . ", line)
    # compound operators first, so a lone "=" is always an assignment
    gsub(/(<<=|>>=|==|!=|<=|>=|\+=|-=|\*=|\/=|\|=|&=|\^=|%=|&&|\|\||\+\+|--)/, " @op ", line)
    gsub(/[][(){};,=*:.&|!<>+\/%^~?-]/, " & ", line)
    n = split(line, tk, /[ \t]+/)
    for (i = 1; i <= n; i++) if (tk[i] != "") token(tk[i])
}
END {
    if (infn) end_function()
    for (k = 1; k <= ngpr; k++) check(gpf[k], gpl[k], gpk[k], gpn[k], "")
    if (problems > 0) { print "lint-pragmas: " problems " problem(s) in " nfiles " files"; exit 1 }
    print "lint-pragmas: " checked " pragmas in " nfiles " files OK"
}
' "$tmp/all.i"
