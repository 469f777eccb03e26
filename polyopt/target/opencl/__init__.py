"""The OpenCL backend: loops bound to work-groups and work-items, run through pyopencl.

Modules: :mod:`.plan` (kernels, NDRange, buffers, barriers and refusals, from isl),
:mod:`.codegen` (OpenCL C text), :mod:`.values` (statement values as OpenCL C),
:mod:`.runtime` (pyopencl, imported lazily: device, context, queue) and :mod:`.target`
(the ``opencl`` target and its callable kernels).
"""
