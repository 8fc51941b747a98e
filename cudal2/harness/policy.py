"""Static source policy: the contract's forbidden list, checked before anything is compiled.

Guarantees: `check(source)` returns every violation it finds, each as (rule, line, excerpt),
on the source with comments and string literals removed (so a forbidden name in a comment
does not count, and hiding one in a comment does not help); everything but the includes is
matched by name. Includes (`include_directives`) are read as the preprocessor reads them, not
from the stripped text: lines end at LF, CR or CRLF, backslash-newline splices (blanks allowed
between) are undone first, a directive may begin with `#` or the digraph `%:` after blanks and
block comments, and every physical line is a candidate start whatever a lexer thinks it is in
(a raw string or a digit separator desynchronised the stripper and hid a line from it; review
44). Each `include`, `include_next`, `import` or `embed` directive, and each `__has_include`,
must name its header literally (`<...>` or `"..."`, no macro), without an absolute path or a
`..` part, and the header must be on the allow-list: a computed include, a digraph, a splice, a
lone CR or `cuda/std/../../..` read any file nvcc could open (`/proc/self/environ` into the
compiler's error text, `/dev/zero` until the machine ran out of memory). The blanks before and
inside a directive are GCC's: space, tab, VT, FF and NUL (GCC ignores a NUL; a UTF-8 byte order
mark, skipped at the file's start, counts as one too), and `#line` and its GNU linemarker form
(`# 2 "file"`) are refused: GCC's diagnostics quote the source line at their location from the
file the location names, so `#line 2 "/etc/passwd"` and a `#warning` printed that file's second
line into the build log (review 45).
Names the preprocessor acts on are spelled in the text: token pasting (`##`, `%:%:`) and universal
character names are refused anywhere in the file (a pasted `__has_include` probed for any file), a
`#pragma` must be loop or diagnostic control (`GCC dependency` opened any file: an existence oracle,
and a FIFO blocked the build), and `_Pragma` must hold one plain string of those (review 45's
leftovers). A `#` or `%:` outside comments and literals must begin a directive or stringize a
function-like macro's parameter (`_stray_hashes`): cicc preprocesses gcc's output again, and a `#`
that gcc passed on as text was a directive to it (review 48). The allowed headers' own macros are
not a way round: before the file's last `#include`, `#define`/`#undef` name only upper-case macros
(an allowed header's computed include, `#include CUDA_STD_HEADER(cassert)`, expanded a `#define
cassert ../../../etc/hostname` and read it), and the CCCL names that pass an argument to `_Pragma` or
`__has_include` (`_CCCL_PRAGMA`, `_CCCL_HAS_INCLUDE`) are refused (review 49).

Does not: prove a kernel honest. It is a name-level filter that catches the plain forms of the
reward-hacking catalogue cheaply; obfuscated forms (a launch on a literal 0 stream, state
kept in the workspace, an every-other-call flag in the one allowed `static bool`) pass here
and are caught by the runtime checks in `harness/judge.py`. Nor does it keep the compiler from host files
by construction: these rules close that class only as far as they read a file as gcc, cicc and
the allowed headers do (five reviews found routes they missed); where the compiler runs outside
its sandbox (v1 host code, `build.sandbox` off, or 'auto' on a machine without user namespaces;
see `sandbox.py`), these rules are all that stands between a source and the machine's files.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from dataclasses import dataclass

ALLOWED_HEADERS = (
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "cudaTypedefs.h", "cuda_fp16.h", "cuda_bf16.h",
    "mma.h", "cuda/barrier", "cuda/pipeline", "cuda/ptx", "cuda/std/*", "cooperative_groups.h",
    "cooperative_groups/*", "cute/*", "cutlass/*", "cstdint", "stdint.h", "cstddef", "stddef.h",
    "type_traits", "climits", "cstdio",
)

# The driver API is allowed for tensor maps and launches only (see docs/kernel-contract.md).
ALLOWED_DRIVER = {
    "cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col", "cuTensorMapReplaceAddress", "cuLaunchKernel",
    "cuLaunchKernelEx", "cuFuncSetAttribute", "cuGetErrorName", "cuGetErrorString",
}

# (rule, regex). Each rule names the catalogue class it stands for.
RULES: list[tuple[str, re.Pattern[str]]] = [(r, re.compile(p)) for r, p in [
    ("sync", r"\bcuda(Device|Thread|Stream|Event)Synchronize\b|\bcu(Ctx|Stream|Event)Synchronize\b"
             r"|\bcudaStreamWaitEvent\b|\bcudaStreamQuery\b|\bcudaEventQuery\b"),
    ("allocation", r"\bcuda(Malloc|Free|HostAlloc|HostRegister|MallocHost|FreeHost)\w*\b|\bcuMem\w+\b"
                   r"|\b(malloc|calloc|realloc|free|aligned_alloc|posix_memalign)\s*\(|\bnew\b\s*[\w:<(\[]|\bdelete\b"
                   r"|\bstd::(vector|string|map|unordered_map|set|list|deque|shared_ptr|unique_ptr|make_\w+)\b"),
    ("stream_escape", r"\bcudaStream[A-Z]\w*|\bcudaStreamLegacy\b|\bcudaStreamPerThread\b|\bcudaEvent\w*|\bcudaGraph\w*"
                      r"|\bcudaStreamBeginCapture\w*|\bcu(Stream|Event|Graph|Ctx)\w*|\bcudaSetDevice\b|\bcudaDeviceReset\b"
                      r"|\bcudaMemcpy(ToSymbol|FromSymbol|2D|3D|Peer)?\b|\bcudaMemset(2D|3D)?\b"
                      r"|\bcudaLaunchHostFunc\b|\bcudaStreamAddCallback\b|\bcudaCpuDeviceId\b|\bcudaMemPrefetch\w*"),
    ("persisting_l2", r"AccessPolicyWindow|\bcudaLimitPersistingL2CacheSize\b|\bcudaDeviceSetLimit\b"
                      r"|\bcudaCtxResetPersistingL2Cache\b|\bhitRatio\b|\bcudaAccessProperty\w*"),
    ("host_side_effect", r"\bstd::(thread|async|jthread|future|ifstream|ofstream|fstream|filesystem|system)\b"
                         r"|\bpthread_\w+|\b(fopen|fwrite|fread|freopen|open|creat|unlink|socket|connect|bind|listen"
                         r"|fork|vfork|execv\w*|execl\w*|system|popen|getenv|setenv|putenv|syscall|dlopen|dlsym|mmap"
                         r"|kill|raise|signal|sleep|usleep|nanosleep)\s*\("
                         r"|\bcudaGetDriverEntryPoint\w*\b|\bcuGetProcAddress\w*\b|\bomp_\w+|#\s*pragma\s+omp"),
    ("load_time_code", r"__attribute__\s*\(\(\s*(constructor|destructor)|\binit_priority\b"),
]]

# Contract v2 files hold device code only: headers that declare device functions and types.
DEVICE_HEADERS = (
    "cuda_fp16.h", "cuda_bf16.h", "cuda.h", "cuda_runtime.h", "mma.h", "cuda/ptx", "cuda/barrier", "cuda/std/*",
    "cooperative_groups.h", "cooperative_groups/*", "cute/*", "cutlass/*", "cstdint", "stdint.h", "cstddef",
    "stddef.h", "climits", "type_traits",
)

_DRIVER_CALL = re.compile(r"\b(cu[A-Z]\w*)\s*\(")


@dataclass(frozen=True)
class Violation:
    rule: str
    line: int
    excerpt: str

    def __str__(self) -> str:
        return f"{self.rule} (line {self.line}): {self.excerpt}"


_INCLUDE_LINE = re.compile(r"\s*#\s*include\b")


def strip_comments_and_strings(source: str) -> str:
    """Blank out comments and string/char literals, keeping line numbers and include lines."""
    out, i, n = [], 0, len(source)
    line = (0, -1, -1)   # (start, end, include match end or -1) of the line last asked about: each line
    # is searched once (a search back to the line start per quote, and the include regex over the
    # line's leading blanks per quote, were quadratic in a line's length: 80,000 characters of
    # blanks and quotes took 3.3 s; review 43)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in source[i:j])); i = j
        elif c in "\"'":
            if c == '"' and i > line[1]:
                start = source.rfind("\n", 0, i) + 1
                end = source.find("\n", i)
                end = n if end < 0 else end
                m = _INCLUDE_LINE.match(source[start:end])
                line = (start, end, m.end() if m else -1)
            if c == '"' and 0 <= line[2] <= i - line[0]:
                j = source.find('"', i + 1) + 1 or n  # keep the include's path
                out.append(source[i:j]); i = j
                continue
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else "")); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


_HEADER_NAME = re.compile(r"[A-Za-z0-9_.+/-]+")   # no quote, comment, backslash or blank: read alike as a
# header name and as ordinary tokens (`<cute/*>` passed `cute/*`, and a lexer takes `/*` for a comment)


def header_allowed(header: str, extra: tuple[str, ...] | list[str] = (), allowed: tuple[str, ...] = ALLOWED_HEADERS) -> bool:
    """True for a header on the allow-list (or `extra`) that stays inside the include folders: a
    pattern's `*` matches `/` too, so `cuda/std/../../../../etc/passwd` matched `cuda/std/*`. The
    name holds only letters, digits and `_.+-/`, with no empty part."""
    if not header or header.startswith(("/", "~")) or not _HEADER_NAME.fullmatch(header) or \
            {"..", ""} & set(header.split("/")):
        return False
    return any(fnmatch.fnmatchcase(header, pat) for pat in (*allowed, *extra))


_SPLICE = re.compile(r"\\[ \t\v\f]*\n")       # GCC splices a backslash, blanks, newline (with a warning)
_FILE_DIRECTIVES = ("include", "include_next", "import", "embed")   # the directives that read a file
_LINE = "line"      # names the file later diagnostics quote lines from (so does a linemarker, `# 2 "f"`)
_BLANKS = " \t\v\f\0\ufeff"   # GCC's horizontal blanks (NUL ignored with a warning) and a BOM
_HAS_INCLUDE = re.compile(r"\b__has_(?:include(?:_next)?|embed)\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
# What can spell a name no literal scan sees: token pasting (`##`, digraph `%:%:`) and universal
# character names (`\u0064` is `d`). Refused anywhere in the file, comments and strings included
# (over-refusing, never hiding): without them every identifier the preprocessor acts on, like
# `__has_include` or a pragma's `dependency`, appears in the text as it is read (review 45's
# leftover: `__has_` ## `include` probed for any file, `#pragma GCC dependency` too, and blocked
# the build on a FIFO).
_NAME_BUILDERS = re.compile(r"##|%:%:|\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|N\{)")
_PRAGMA_OP = re.compile(r"\b_Pragma\b")
# Macros of the allowed headers that pass their argument to `_Pragma` or `__has_include`: used in a
# kernel file they are a pragma or an existence probe no scan of its text sees (`_CCCL_PRAGMA(GCC
# dependency "f")`, `#if _CCCL_HAS_INCLUDE("f")`; review 49). The CCCL libraries' names (`_CCCL_*`,
# `__CCCL*`, `LIBCUDACXX_*`, `CCCL_*`, `CUB_*`, `THRUST_*`: internals, and thrust and cub are not
# allowed headers) are refused whole; tests/test_review49.py derives the wrappers from the installed
# headers and checks that each is one of these.
_HEADER_WRAPPERS = re.compile(r"\b(?:_CCCL_\w*|__CCCL\w*|(?:LIBCUDACXX|CCCL|CUB|THRUST)_\w*)\b")
# The macros a kernel file may define or undefine before an #include: upper-case names (BM, NDEBUG,
# CUTLASS_*) and `__CUDA_NO_*__` switches. A name with a lower-case letter, a reserved one, a CCCL
# library's (THRUST_MR_STD_MR_HEADER is included by name) or CUDA_STD_HEADER could be a token of an
# allowed header's computed include (`#include CUDA_STD_HEADER(cassert)` expands its argument:
# `#define cassert ../../../../etc/passwd` read it) or of a `_CCCL_HAS_INCLUDE(<version>)` operand (a
# probe for any file; review 49). tests/test_review49.py checks that no token of the installed
# headers' computed includes is one of these.
_CONFIG_MACRO = re.compile(r"(?!CUDA_STD_HEADER$|(?:LIBCUDACXX|CCCL|CUB|THRUST)_)[A-Z][A-Z0-9_]*|__CUDA_NO_\w+__")
_PRAGMA_STRING = re.compile(r'\(\s*(?:L|u8|u|U)?"((?:[^"\\\n]|\\.)*)"\s*\)')
# The pragmas a kernel may use: loop and diagnostic control. Others can name files (GCC's
# `dependency`, `pch_preprocess`) or change how the file is compiled; an unknown one is refused.
_PRAGMAS = re.compile(r"(unroll|nounroll|once|message|pack|STDC|push_macro|pop_macro|(nv_)?diag_\w+|nv_diagnostic"
                      r"|(GCC|clang)\s+(diagnostic|unroll|ivdep|warning|error))\b")


def include_directives(source: str) -> list[tuple[int, str, str | None]]:
    """(line, directive, header or None when not a literal <...>/"..." operand) of every directive
    that reads a file or names one (`line`, a linemarker reported as `line` too), and every
    `__has_include` (as directive `__has_include`), in linear time; also `macro_before_include` (a
    `#define`/`#undef` of a name `_CONFIG_MACRO` does not allow, before a later file-reading directive)
    and `header_wrapper` (a CCCL name, `_HEADER_WRAPPERS`), with the name.
    A superset of what the preprocessor reads: a line inside a comment or a raw string that looks
    like a directive is reported too (over-refusing, never hiding)."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")   # GCC ends a line at CR too
    cuts: list[int] = []        # positions in the spliced text where a splice was removed
    removed: list[int] = []     # characters removed up to and including each cut
    parts, last, total = [], 0, 0
    for m in _SPLICE.finditer(text):
        parts.append(text[last:m.start()])
        total += m.end() - m.start()
        cuts.append(m.start() - (total - (m.end() - m.start())))
        removed.append(total)
        last = m.end()
    parts.append(text[last:])
    t, n = "".join(parts), len(text) - total

    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_of(p: int) -> int:   # (a count from the start per directive was quadratic in their number)
        k = bisect.bisect_right(cuts, p)
        return bisect.bisect_right(newlines, p + (removed[k - 1] if k else 0) - 1) + 1

    close = [n + 1, -1]   # [where the last search for `*/` began, the first `*/` from there (-1: none)]

    def skip(p: int) -> int:           # blanks and block comments (which may span lines)
        while p < n:
            if t[p] in _BLANKS:
                p += 1
            elif t.startswith("/*", p):
                # the cached `*/` answers only a search from at or after where it began, and before
                # it: the scans below restart from the file's start, and a `*/` cached at its end
                # made `__has_include/**/("/etc/passwd")` read a later `("cuda_fp16.h")` (review 48)
                if not (close[0] <= p + 2 and (close[1] < 0 or close[1] >= p + 2)):
                    close[:] = [p + 2, t.find("*/", p + 2)]
                if close[1] < 0:
                    return n
                p = close[1] + 2
            else:
                break
        return p

    def operand(p: int) -> str | None:
        p = skip(p)
        if p < n and t[p] in "<\"":
            eol = t.find("\n", p)
            end = t.find(">" if t[p] == "<" else '"', p + 1, n if eol < 0 else eol)
            if end > p:
                return t[p + 1:end]
        return None

    def pragma_allowed(text: str) -> bool:   # the words after `pragma`, comments and blanks before them
        return _PRAGMAS.match(text.lstrip(_BLANKS)) is not None

    out: list[tuple[int, str, str | None]] = []
    macros: list[tuple[int, str]] = []   # (line start, name) of each #define and #undef
    last_read = -1                       # where the last file-reading directive's line starts
    start = 0
    while start < n:
        p = skip(start)
        if t.startswith("#", p) or t.startswith("%:", p):
            p = skip(p + (1 if t[p] == "#" else 2))
            if (m := _IDENT.match(t, p)) and m.group() in (*_FILE_DIRECTIVES, _LINE):
                out.append((line_of(start), m.group(), operand(m.end())))
                last_read = start if m.group() in _FILE_DIRECTIVES else last_read
            elif p < n and t[p].isdigit():   # a GNU linemarker: `# 2 "file"`
                out.append((line_of(start), _LINE, operand(p + 1)))
            elif m and m.group() in ("define", "undef"):
                name = _IDENT.match(t, skip(m.end()))
                macros.append((start, name.group() if name else ""))
            elif m and m.group() == "pragma":
                eol = t.find("\n", m.end())
                if not pragma_allowed(t[skip(m.end()):n if eol < 0 else eol]):
                    out.append((line_of(start), "pragma", None))
        nl = t.find("\n", start)
        if nl < 0:
            break
        start = nl + 1
    for pos, name in macros:   # a macro an allowed header read after it could expand in a computed include
        if pos < last_read and not _CONFIG_MACRO.fullmatch(name):
            out.append((line_of(pos), "macro_before_include", name))
    for m in _HEADER_WRAPPERS.finditer(t):
        out.append((line_of(m.start()), "header_wrapper", m.group()))
    for m in _HAS_INCLUDE.finditer(t):
        p = skip(m.end())
        what = "__has_embed" if m.group() == "__has_embed" else "__has_include"
        out.append((line_of(m.start()), what, operand(p + 1) if t.startswith("(", p) else None))
    for m in _NAME_BUILDERS.finditer(t):
        out.append((line_of(m.start()), "name_builder", m.group()))
    out += _stray_hashes(t, skip, line_of)
    for m in _PRAGMA_OP.finditer(t):   # `_Pragma("...")` with one plain string literal of an allowed pragma
        p = skip(m.end())
        lit = _PRAGMA_STRING.match(t, p)
        if not (lit and pragma_allowed(lit.group(1).replace('\\"', '"').replace("\\\\", "\\"))):
            out.append((line_of(m.start()), "_Pragma", None))
    return out


_ID_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")   # gcc takes `$` in names
_ID_CHARS = _ID_START | frozenset("0123456789")
_RAW_PREFIXES = frozenset({"R", "LR", "uR", "UR", "u8R"})


def _stray_hashes(t: str, skip, line_of) -> list[tuple[int, str, str | None]]:
    """Every `#` or `%:` token that is neither a directive's introducer (the first token of a line)
    nor a function-like macro's stringizing operator (`#` then a parameter), as `stray_hash`, read as
    gcc reads the spliced text `t` (comments, string and character literals, digit separators).

    nvcc preprocesses with gcc and hands gcc's output to cicc, whose EDG front end preprocesses it
    again: a `#` that gcc passes on as text (from a macro, `#define H # include "/etc/hostname"`, or
    after an empty one or a comment) and that lands first on an output line is a directive to cicc,
    which then read any file into the build log or the kernel (review 48). To read the text as gcc
    does, a raw string literal (`raw_string`; gcc undoes splices inside one, so its end moves) and a
    character outside ASCII in code (`non_ascii`; which of them gcc takes into a name or a number
    decides where a digit separator or a literal starts) are refused, both where this lexer meets
    them in code; a UTF-8 byte order mark is allowed as the file's first character."""
    out: list[tuple[int, str, str | None]] = []
    n, i = len(t), 0
    line_start, fn_define = True, False   # at a line's first token; in a function-like #define
    while i < n:
        c = t[i]
        if c == "\n":
            line_start, fn_define = True, False
            i += 1
        elif c in " \t\v\f\0" or (c == "\ufeff" and i == 0):
            i += 1
        elif t.startswith("//", i):
            j = t.find("\n", i)
            i = n if j < 0 else j
        elif t.startswith("/*", i):   # whitespace, a directive goes on past its end (gcc's phase 3)
            j = t.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == '"' or c == "'":   # to the closing quote; unterminated: to the line's end, as gcc
            j = i + 1
            while j < n and t[j] != c and t[j] != "\n":
                j += 2 if t[j] == "\\" and j + 1 < n and t[j + 1] != "\n" else 1
            i = j + 1 if j < n and t[j] == c else j
            line_start = False
        elif c == "#" or t.startswith("%:", i):
            k = i + (1 if c == "#" else 2)
            if t.startswith(("#", "%:"), k):   # a paste, `##` or `%:%:`: refused as a name builder
                k += 1 if t[k] == "#" else 2
            elif line_start:   # a directive: note whether it defines a function-like macro
                m = _IDENT.match(t, skip(k))
                name = _IDENT.match(t, skip(m.end())) if m and m.group() == "define" else None
                fn_define = bool(name) and t.startswith("(", name.end())
            elif not (fn_define and (q := skip(k)) < n and t[q] in _ID_START):
                out.append((line_of(i), "stray_hash", t[i:k]))
            line_start = False
            i = k
        elif c in "0123456789" or (c == "." and i + 1 < n and t[i + 1] in "0123456789"):
            j = i + 1   # a pp-number, as libcpp's lex_number: digit separators, exponent signs, `$`
            while True:
                while j < n and (t[j] in _ID_CHARS and t[j] != "$" or (t[j] == "." and t[j - 1] != "'")
                                 or t[j] == "'" or (t[j] in "+-" and t[j - 1] in "eEpP")):
                    j += 1
                while t[j - 1] == "'":   # a number does not end with a separator
                    j -= 1
                if j < n and t[j] == "$":
                    j += 1
                    continue
                break
            i, line_start = j, False
        elif c in _ID_START:
            j = i + 1
            while j < n and t[j] in _ID_CHARS:
                j += 1
            if t.startswith('"', j) and t[i:j] in _RAW_PREFIXES:
                out.append((line_of(i), "raw_string", t[i:j + 1]))
            i, line_start = j, False
        else:
            if ord(c) > 127:
                out.append((line_of(i), "non_ascii", c))
            i, line_start = i + 1, False
    return out


# What each finding of `include_directives` other than an include says (`name`: what it found).
_FINDINGS = {
    _LINE: "#line or a linemarker (the compiler's diagnostics quote the file it names): ",
    "name_builder": "{name!r}: token pasting and universal character names are not allowed anywhere in a kernel "
                    "file, comments included: ",
    "stray_hash": "{name!r} outside a directive's start or a function-like macro's stringizing (cicc preprocesses "
                  "gcc's output again): ",
    "macro_before_include": "#define or #undef of {name!r} before an #include (an allowed header's computed include "
                            "could expand it; put it after the #include lines; upper-case names like BM or NDEBUG "
                            "may come before): ",
    "header_wrapper": "{name!r}: a library-internal macro (it passes its argument to _Pragma or __has_include): ",
    "raw_string": "a raw string literal ({name}...; use a plain one): ",
    "non_ascii": "a character outside ASCII in code ({name!r}; comments and literals may hold any): ",
    "pragma": "a pragma a kernel may not use (allowed: unroll, diagnostics, once, message; _Pragma with one plain "
              "string): ",
}
_FINDINGS["_Pragma"] = _FINDINGS["pragma"]


def include_violations(source: str, extra: tuple[str, ...] | list[str] = (),
                       allowed: tuple[str, ...] = ALLOWED_HEADERS) -> list[Violation]:
    """A `header` violation for every file-reading directive (`include_directives`) that is not a
    plain `#include` (or `__has_include`) of an allowed header named literally."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found = []
    excerpts: dict[int, str] = {}   # one per line: a line of 100,000 findings was stripped 100,000 times
    for ln, what, header in include_directives(source):
        if (excerpt := excerpts.get(ln)) is None:
            excerpt = excerpts[ln] = lines[ln - 1].strip()[:120] if ln - 1 < len(lines) else ""
        if what in _FINDINGS:
            found.append(Violation("header", ln, _FINDINGS[what].format(name=header) + excerpt))
        elif what not in ("include", "__has_include"):
            found.append(Violation("header", ln, f"#{what} (only #include of an allowed header): {excerpt}"))
        elif header is None:
            found.append(Violation("header", ln, f"a computed {what} (name the header literally): {excerpt}"))
        elif not header_allowed(header, extra, allowed):
            found.append(Violation("header", ln, excerpt))
    return found


def check(source: str, extra_headers: tuple[str, ...] | list[str] = ()) -> list[Violation]:
    """Every violation in `source`, in line order; an empty list means the policy passes."""
    code = strip_comments_and_strings(source)
    lines = code.splitlines()
    found: list[Violation] = []

    def at(pos: int) -> tuple[int, str]:
        ln = code.count("\n", 0, pos) + 1
        return ln, lines[ln - 1].strip()[:120] if ln - 1 < len(lines) else ""

    found += include_violations(source, extra_headers)
    for rule, pat in RULES:
        for m in pat.finditer(code):
            ln, text = at(m.start())
            found.append(Violation(rule, ln, text))
    for m in _DRIVER_CALL.finditer(code):
        if m.group(1) not in ALLOWED_DRIVER and not m.group(1).startswith("cuda"):
            ln, text = at(m.start())
            found.append(Violation("driver_api", ln, text))
    found += _state_violations(code, at)
    for start, args in _launches(code):
        if _top_level_commas(args) < 3:  # no stream argument: the legacy default stream
            found.append(Violation("stream_escape", *at(start)))
    uniq = {(v.rule, v.line): v for v in found}
    return sorted(uniq.values(), key=lambda v: (v.line, v.rule))


def check_device_only(source: str, extra_headers: tuple[str, ...] | list[str] = ()) -> list[Violation]:
    """The static check of a contract v2 file: its includes only. Nothing else in it can run on the
    host (it is compiled with no host pass), and what its device code may not do is checked on the
    built cubin (`cubin.violations`), which no spelling in the source can dodge."""
    return include_violations(source, extra_headers, DEVICE_HEADERS)


def _launches(code: str) -> list[tuple[int, str]]:
    r"""(position, text between) of each `<<<...>>>`, in linear time: what the regex <<<(.*?)>>>
    (re.S) finds. The regex rescanned to the end from every unclosed `<<<` (20,000 of them: 32 s;
    review 43); an opening with no `>>>` after it ends the search, as no later one has one."""
    out, i = [], 0
    while (start := code.find("<<<", i)) >= 0:
        end = code.find(">>>", start + 3)
        if end < 0:
            break
        out.append((start, code[start + 3:end]))
        i = end + 3
    return out


def _top_level_commas(args: str) -> int:
    depth, n = 0, 0
    for ch in args:
        depth += ch in "([{<"
        depth -= ch in ")]}>"
        n += ch == "," and depth == 0
    return n


def reason(violations: list[Violation]) -> str:
    """One line naming the first few violations."""
    head = "; ".join(str(v) for v in violations[:3])
    more = f" (+{len(violations) - 3} more)" if len(violations) > 3 else ""
    return f"policy: {head}{more}"


_DECL_END = re.compile(r"[;({=\[]")
_IMMUTABLE = re.compile(r"\b(constexpr|__shared__|__constant__|extern)\b")


def _immutable(decl: str) -> bool:
    """True when the declared variable itself cannot change (`const void* p` can: only `* const` pins a pointer)."""
    if _IMMUTABLE.search(decl):
        return True
    if "*" in decl:
        return bool(re.search(r"\*\s*const\b", decl))
    return bool(re.search(r"\bconst\b", decl))
_TRANSPARENT = re.compile(r"(\bnamespace\b[\w\s:]*|\bextern\s+\"C\"\s*)$")
_NOT_VARIABLE = re.compile(r"^\s*(#|typedef\b|using\b|template\b|static_assert\b|namespace\b|extern\b"
                           r"|(struct|class|union|enum)\b[^=]*$)")


def _state_violations(code: str, at) -> list[Violation]:
    """Mutable state that outlives a call: `__device__`/`__managed__` variables, non-const
    statics (except the contract's `static bool` for one-time attribute setup) and mutable
    variables at namespace scope."""
    found = []
    for m in re.finditer(r"\b__managed__\b", code):
        found.append(Violation("device_state", *at(m.start())))
    for m in re.finditer(r"\b(__device__|static)\b", code):
        end = _DECL_END.search(code, m.end())
        if end is None or end.group() == "(":
            continue  # a function
        decl = code[m.start():end.start()]
        if _immutable(decl) or re.search(r"\b(struct|class|union|enum)\b", decl):
            continue
        if m.group() == "static" and re.fullmatch(r"static\s+(volatile\s+)?bool\s+\w+\s*", decl):
            continue  # the one-time-setup exception
        rule = "device_state" if "__device__" in decl else "host_state"
        found.append(Violation(rule, *at(m.start())))
    # Namespace-scope variables: walk top-level statements, looking through namespace and
    # extern "C" braces, skipping function and type bodies.
    stack: list[bool] = []  # one entry per open brace: True when transparent
    opaque = 0                # open braces that are function or type bodies
    stmt_start, i = 0, 0
    while i < len(code):
        c = code[i]
        if c == "#":          # a preprocessor line ends no statement
            j = code.find("\n", i)
            i = stmt_start = len(code) if j < 0 else j
            continue
        if c == "{":
            transparent = opaque == 0 and bool(_TRANSPARENT.search(code[stmt_start:i].strip()))
            stack.append(transparent)
            opaque += not transparent
            if transparent:
                stmt_start = i + 1
        elif c == "}":
            opaque -= not (stack.pop() if stack else True)
            if opaque == 0:
                stmt_start = i + 1
        elif c == ";" and opaque == 0:
            head = code[stmt_start:i].strip()
            stmt_start = i + 1
            if head and not _NOT_VARIABLE.search(head) and "}" not in head:
                first = _DECL_END.search(head + ";")
                judged = re.match(r"(static|__device__)\b", head)  # by the loop above
                if first.group() != "(" and not _immutable(head) and not judged:
                    found.append(Violation("host_state", *at(code.rfind(head, 0, i))))
        i += 1
    return found
