"""TargetInfo.for_opencl: the device's limits as target facts."""

import polyopt as po
from polyopt.machine import TargetInfo
from polyopt.target.opencl.runtime import queue_for


def test_for_opencl_reads_the_device():
    device = queue_for(None).device
    info = TargetInfo.for_opencl(device)
    assert info.kind == "gpu" and info.name == device.name.strip()
    assert info.max_group_size == device.max_work_group_size
    assert info.scope("shared").capacity == device.local_mem_size
    assert info.scope("global").capacity == device.global_mem_size
    assert info.scope("local").capacity is None
    assert info.vector_bits == 32 * max(1, device.preferred_vector_width_float)
    assert "threadIdx.x" in info.bind_tags and "blockIdx.z" in info.bind_tags
    assert po.TargetInfo is TargetInfo
