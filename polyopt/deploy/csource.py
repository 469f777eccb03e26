"""The C text of an exported model: its header (the C API) and its plan's tables.

:func:`header_text` writes ``NAME.h``; :func:`model_source` writes the one C file the
runtime is compiled from: the plan as constant tables (kernel call thunks, tensors,
steps, argument locations, sizes, the weights' SHA-256, the CPU features) followed by
``runtime/sha256.c`` and ``runtime/runtime.c``.

>>> print(header_text("tiny").splitlines()[0])
/* tiny.h: the C API of the model tiny, exported by polyopt (see docs/deploy.md).
"""

from __future__ import annotations

import os

RUNTIME = os.path.join(os.path.dirname(__file__), "runtime")
KINDS = {"input": "PO_INPUT", "output": "PO_OUTPUT", "arena": "PO_ARENA",
         "weights": "PO_WEIGHTS"}
STATUS = (("POLYOPT_OK", 0, "done"),
          ("POLYOPT_E_ARGUMENT", 1, "a wrong argument: an index, a name, a buffer's size"),
          ("POLYOPT_E_IO", 2, "the weights file cannot be read"),
          ("POLYOPT_E_INTEGRITY", 3, "the weights are truncated, edited or from another export"),
          ("POLYOPT_E_CPU", 4, "this CPU lacks an instruction set the kernels were compiled for"),
          ("POLYOPT_E_NOMEM", 5, "out of memory"),
          ("POLYOPT_E_AMX", 6, "Linux refused the AMX tile state the kernels need"))


WEIGHTS_CHUNK_BYTES = 1 << 20  # the weights file is hashed (and checked) per 1 MiB
AMX_TEMPLATES = ("int8_matmul_amx", "int8_conv_amx")  # (polyopt.graph.lowering)


def plan_uses_amx(plan: dict) -> bool:
    """Whether a step of ``plan`` runs a kernel on AMX tiles: the runtime then asks
    Linux for the tile state when a model is created."""
    return any(step.get("template") in AMX_TEMPLATES for step in plan["steps"])


def header_text(name: str, plan: dict | None = None) -> str:
    """``NAME.h``: every function of the model's C API, documented."""
    p = f"{name}_"
    summary = ""
    if plan is not None:
        def tensors(kind):
            return ", ".join(f"{t['name']} {t['dtype']}{t['shape']}" for t in plan[kind])
        summary = (f"\n   Inputs: {tensors('inputs')}.\n   Outputs: {tensors('outputs')}.")
    status = "\n".join(f"#define {n} {v} /* {what} */" for n, v, what in STATUS)
    amx_note = ("\n   This model has AMX kernels." if plan is not None and plan_uses_amx(plan)
                else "")
    return f"""/* {name}.h: the C API of the model {name}, exported by polyopt (see docs/deploy.md).
   Link with lib{name}.a or lib{name}.so and -lm -lpthread (and -lmvec when the library
   needs it: see {name}.json).{summary}

   Memory: with glibc, {name}_create asks malloc to keep freed memory (as polyopt's Python
   executor does: kernels allocate buffers on every run); POLYOPT_KEEP_MALLOC=1 leaves
   malloc as it is.  Buffers from 4 MB on get transparent huge pages advised (the
   weights once verified); POLYOPT_HUGEPAGES=0 advises none.

   Thread safety: a {name}_model is used by one thread at a time; to run on several
   threads at once, create one model per thread (each holds its arena and weights).
   Functions without a model are safe from any thread; {name}_error_message() is per
   thread.  Buffers are C-contiguous (row-major) arrays of the tensor's dtype. */
#ifndef POLYOPT_{name.upper()}_H
#define POLYOPT_{name.upper()}_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {{
#endif

#ifndef POLYOPT_OK
{status}
#endif
#ifndef POLYOPT_E_AMX
#define POLYOPT_E_AMX 6
#endif

typedef struct {p}model {p}model;

/* Check the CPU, read and verify the weights (each 1 MiB chunk's SHA-256, on the thread
   pool): `weights` is the export's folder or its {name}.weights file; a manifest.json in
   that folder must name this library's build id (and the SHA-256 of lib{name}.so when
   the model runs from it).  On success *model is the new model;
   otherwise it is NULL and the status says why ({name}_error_message() says more). */
int {p}create(const char *weights, {p}model **model);
void {p}destroy({p}model *model);
/* POLYOPT_E_CPU when this CPU lacks a feature the kernels were compiled for. */
int {p}check_cpu(void);
/* POLYOPT_E_AMX when the kernels compute on Intel AMX tiles and Linux refuses this
   process the tile state (asked once per process, by {name}_create too); POLYOPT_OK
   otherwise.  A model without AMX kernels asks nothing.{amx_note} */
int {p}check_amx(void);
/* The message of this thread's last failure. */
const char *{p}error_message(void);

/* The tensors: count, name, dtype ("float32", "int8", ...), rank, shape, size in bytes;
   NULL / -1 / 0 for an index out of range.  *_index: the index of a name, or -1. */
int {p}input_count(void);
const char *{p}input_name(int index);
const char *{p}input_dtype(int index);
int {p}input_ndim(int index);
const int64_t *{p}input_shape(int index);
size_t {p}input_bytes(int index);
int {p}input_index(const char *name);
int {p}output_count(void);
const char *{p}output_name(int index);
const char *{p}output_dtype(int index);
int {p}output_ndim(int index);
const int64_t *{p}output_shape(int index);
size_t {p}output_bytes(int index);
int {p}output_index(const char *name);

/* Zero copy: the model reads the caller's input buffer, and writes the caller's output
   buffer when one is set (otherwise its own, which get_output copies from).  Buffers
   stay the caller's and must live until run returns; `bytes` must be the tensor's size. */
int {p}set_input({p}model *model, int index, const void *data, size_t bytes);
int {p}set_input_by_name({p}model *model, const char *name, const void *data, size_t bytes);
int {p}set_output({p}model *model, int index, void *data, size_t bytes);
int {p}get_output({p}model *model, int index, void *data, size_t bytes);
int {p}get_output_by_name({p}model *model, const char *name, void *data, size_t bytes);

/* Run the model on the inputs set. */
int {p}run({p}model *model);

/* The threads the kernels run on: settable when the model was exported with --threads 0
   (the count is the process's thread pool's: it applies to every such model). */
int {p}set_threads({p}model *model, int threads);
int {p}threads({p}model *model);

/* The export's identity: the SHA-256 of its plan and weights (the manifest's build_id). */
const char *{p}build_id(void);

#ifdef __cplusplus
}}
#endif
#endif
"""


def model_source(name: str, plan: dict, symbols: list[str], weights_chunks: list[str],
                 features: list[str], cpu: str, build_id: str, *,
                 embedded: bool = False) -> str:
    """The C file of the runtime of one model: its tables, then the runtime
    (``embedded``: the weights are the library's symbol ``<name>_weights_data``;
    ``weights_chunks``: the SHA-256 of each :data:`WEIGHTS_CHUNK_BYTES` of the weights
    file, hex, which the runtime checks as it reads them)."""
    lines = [f"/* {name}: the plan and runtime of an exported model (generated by polyopt) */",
             "#define _GNU_SOURCE",
             "#include <errno.h>\n#include <stdarg.h>\n#include <stdint.h>\n#include <stdio.h>",
             "#include <stdlib.h>\n#include <string.h>\n#include <sys/stat.h>",
             "#include <fcntl.h>\n#include <unistd.h>\n#include <sys/mman.h>",
             "#if defined(__GLIBC__)\n#include <malloc.h>\n#endif",
             f'#include "{name}.h"',
             f"#define PO_API(x) {name}_##x",
             f"#define PO_NAME {_c_string(name)}", f"#define PO_CPU {_c_string(cpu)}",
             f"#define PO_INPUT_COUNT {len(plan['inputs'])}",
             f"#define PO_OUTPUT_COUNT {len(plan['outputs'])}",
             f"#define PO_ARENA_BYTES {plan['arena_bytes']}ULL",
             f"#define PO_WEIGHTS_BYTES {plan['weights_bytes']}ULL",
             f"#define PO_WEIGHTS_CHUNK_BYTES {WEIGHTS_CHUNK_BYTES}ULL",
             f"#define PO_BUILD_ID {_c_string(build_id)}",
             f"#define PO_THREADS {plan['threads']}",
             f"#define PO_AMX {int(plan_uses_amx(plan))}",
             *([f"#define PO_EMBEDDED_WEIGHTS {name}_weights_data"] if embedded else []),
             "enum { PO_INPUT, PO_OUTPUT, PO_ARENA, PO_WEIGHTS };",
             "struct po_location { int kind; uint64_t value; uint64_t offset; };",
             "struct po_tensor { const char *name; const char *dtype; int ndim; "
             "int64_t shape[8]; uint64_t bytes; };",
             "struct po_step { int kernel; int arg_count; int first_arg; uint64_t bytes; "
             "const char *group; uint64_t rows, source_stride, target_stride; };",
             "typedef int32_t (*po_kernel)(void *const *);"]
    arities = {}
    for step in plan["steps"]:
        if step["kernel"] >= 0:
            arities[step["kernel"]] = len(step["args"])
    digests = [", ".join(f"0x{byte:02x}" for byte in bytes.fromhex(chunk))
               for chunk in weights_chunks]
    lines.append("static const unsigned char PO_WEIGHTS_CHUNKS[][32] = {\n    {"
                 + "},\n    {".join(digests or ["0"]) + "}};")
    lines.append(f"#define PO_MAX_ARGS {max(arities.values(), default=1)}")
    for k, symbol in enumerate(symbols):
        count = arities[k]
        params = ", ".join(["void *"] * count)
        args = ", ".join(f"a[{i}]" for i in range(count))
        lines.append(f"int32_t {symbol}({params});\n"
                     f"static int32_t po_call_{k}(void *const *a) {{ return {symbol}({args}); }}")
    lines.append("static const po_kernel PO_KERNELS[] = {"
                 + ", ".join(f"po_call_{k}" for k in range(len(symbols))) + "};"
                 if symbols else "static const po_kernel PO_KERNELS[1] = {0};")
    for kind, table in (("inputs", "PO_INPUTS"), ("outputs", "PO_OUTPUTS")):
        rows = [f"{{{_c_string(t['name'])}, {_c_string(t['dtype'])}, {len(t['shape'])}, "
                f"{{{', '.join(str(d) for d in t['shape']) or '0'}}}, {t['bytes']}ULL}}"
                for t in plan[kind]]
        lines.append(f"static const struct po_tensor {table}[] = {{\n    "
                     + ",\n    ".join(rows or ['{"", "", 0, {0}, 0}']) + "};")
    steps, args = [], []
    for step in plan["steps"]:
        strides = step.get("strides", [0, 0])
        steps.append(f"{{{step['kernel']}, {len(step['args'])}, {len(args)}, "
                     f"{step.get('bytes', 0)}ULL, {_c_string(step['group'])}, "
                     f"{step.get('rows', 1)}ULL, {strides[0]}ULL, {strides[1]}ULL}}")
        args += [f"{{{KINDS[place[0]]}, {place[1]}ULL, "
                 f"{place[2] if len(place) > 2 else 0}ULL}}" for place in step["args"]]
    lines.append("static const struct po_step PO_STEPS[] = {\n    "
                 + ",\n    ".join(steps) + "};" if steps else
                 "static const struct po_step PO_STEPS[1] = {{-1, 0, 0, 0, \"\", 0, 0, 0}};")
    lines.append("static const struct po_location PO_ARGS[] = {\n    "
                 + ",\n    ".join(args or ["{0, 0, 0}"]) + "};")
    lines.append("static const char *const PO_FEATURES[] = {"
                 + ", ".join(_c_string(f) for f in features) + (
                     "" if features else '""') + "};")
    for part in ("sha256.c", "runtime.c"):
        with open(os.path.join(RUNTIME, part), encoding="utf-8") as file:
            lines.append(file.read())
    return "\n".join(lines) + "\n"


def _c_string(text: str) -> str:
    """A C string literal of ``text`` (UTF-8; anything but printable ASCII as octal)."""
    out = []
    for byte in str(text).encode():
        char = chr(byte)
        out.append(char if 32 <= byte < 127 and char not in '"\\?' else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
