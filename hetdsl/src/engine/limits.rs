//! Device limits a launch must respect, checked before anything is allocated so the user gets
//! a sentence naming the limit instead of an OpenCL status code. Pure.

use crate::device::DeviceInfo;

/// What a launch needs from one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Needs<'a> {
    /// The work-group size per dimension.
    pub(crate) local: &'a [usize],
    /// `CL_KERNEL_WORK_GROUP_SIZE` of this kernel on this device.
    pub(crate) kernel_max_work_group: usize,
    /// `CL_KERNEL_COMPILE_WORK_GROUP_SIZE`: the size its `reqd_work_group_size` attribute
    /// fixes, all zeros (or empty) when it has none.
    pub(crate) required_local: Vec<usize>,
    /// Local memory per work-group: the kernel's own plus its `__local` arguments.
    pub(crate) local_bytes: u64,
    /// (argument index, bytes) of each buffer the device must hold.
    pub(crate) buffers: Vec<(usize, u64)>,
    /// Work-items of the whole NDRange.
    pub(crate) total_items: u64,
}

/// NVIDIA's OpenCL faults (Xid 13, an out-of-range address) when a launch's global offset plus
/// size reaches 2^31 work-items, although the standard allows 64-bit ids; seen on two H200s.
pub(crate) const NVIDIA_MAX_GLOBAL_ITEMS: u64 = 1 << 31;

/// `Err` names the first limit exceeded.
pub(crate) fn check(info: &DeviceInfo, needs: &Needs) -> Result<(), String> {
    // The driver refuses every enqueue of another size, which would read as the device failing.
    if needs.required_local.iter().any(|&r| r != 0) {
        let given = (0..3).map(|d| needs.local.get(d).copied().unwrap_or(1));
        if !given.eq(needs.required_local.iter().copied()) {
            return Err(format!(
                "the kernel requires work-groups of {:?} (its `reqd_work_group_size`), the launch \
                 gives {:?}",
                needs.required_local, needs.local
            ));
        }
    }
    let wg: usize = needs.local.iter().product();
    let max_wg = needs.kernel_max_work_group.min(info.max_work_group_size);
    if wg > max_wg {
        return Err(format!(
            "work-group size {:?} ({wg} work-items) exceeds the maximum of {max_wg} for this kernel on this device",
            needs.local
        ));
    }
    for (d, (l, max)) in needs.local.iter().zip(&info.max_work_item_sizes).enumerate() {
        if l > max {
            return Err(format!(
                "work-group size {l} in dimension {d} exceeds the device's maximum of {max}"
            ));
        }
    }
    if needs.local_bytes > info.local_mem_bytes {
        return Err(format!(
            "the kernel needs {} bytes of local memory per work-group; the device has {}",
            needs.local_bytes, info.local_mem_bytes
        ));
    }
    holds(info, &needs.buffers, needs.total_items)
}

/// The limits a launch's buffers and range alone decide, before any kernel is built: each
/// buffer within the device's largest allocation, all of them within its memory, and NVIDIA's
/// range limit. `Err` names the first exceeded. A device of a co-executed launch that fails
/// this sits the launch out.
pub(crate) fn holds(
    info: &DeviceInfo,
    buffers: &[(usize, u64)],
    total_items: u64,
) -> Result<(), String> {
    for &(index, bytes) in buffers {
        if bytes > info.max_alloc_bytes {
            return Err(format!(
                "argument {index}: a buffer of {bytes} bytes exceeds the device's maximum allocation of {} bytes",
                info.max_alloc_bytes
            ));
        }
    }
    if info.nvidia.is_some() && total_items >= NVIDIA_MAX_GLOBAL_ITEMS {
        return Err(format!(
            "the NDRange has {total_items} work-items; NVIDIA's OpenCL fails on global ids of \
             2^31 and above: give each work-item more work or split the problem"
        ));
    }
    let total: u64 = buffers.iter().map(|b| b.1).sum();
    if total > info.global_mem_bytes {
        return Err(format!(
            "the buffers need {total} bytes together; the device has {} bytes of global memory",
            info.global_mem_bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_device() -> DeviceInfo {
        let mut d = DeviceInfo::example_cpu(0, 2);
        d.max_work_group_size = 256;
        d.max_work_item_sizes = vec![256, 64, 64];
        d.local_mem_bytes = 32 << 10;
        d.max_alloc_bytes = 1 << 30;
        d.global_mem_bytes = 3 << 30;
        d
    }

    fn needs(local: &[usize]) -> Needs<'_> {
        Needs {
            local,
            kernel_max_work_group: 256,
            required_local: vec![0, 0, 0],
            local_bytes: 0,
            buffers: vec![],
            total_items: 1 << 20,
        }
    }

    #[test]
    fn within_limits() {
        let d = small_device();
        let n = Needs {
            buffers: vec![(0, 1 << 30), (1, 1 << 30)],
            local_bytes: 32 << 10,
            ..needs(&[16, 16])
        };
        assert_eq!(check(&d, &n), Ok(()));
        let required = Needs { required_local: vec![16, 16, 1], ..n };
        assert_eq!(check(&d, &required), Ok(()));
    }

    #[test]
    fn each_limit_is_named() {
        let d = small_device();
        let cases = [
            (needs(&[512]), "exceeds the maximum of 256"),
            (
                Needs { kernel_max_work_group: 128, ..needs(&[256]) },
                "maximum of 128 for this kernel",
            ),
            (needs(&[2, 128]), "dimension 1 exceeds the device's maximum of 64"),
            (
                Needs { required_local: vec![32, 1, 1], ..needs(&[64]) },
                "requires work-groups of [32, 1, 1]",
            ),
            (Needs { required_local: vec![8, 8, 1], ..needs(&[8, 8, 2]) }, "gives [8, 8, 2]"),
            (Needs { local_bytes: (32 << 10) + 1, ..needs(&[64]) }, "local memory"),
            (
                Needs { buffers: vec![(3, (1 << 30) + 1)], ..needs(&[64]) },
                "argument 3: a buffer of 1073741825 bytes",
            ),
            (Needs { buffers: vec![(0, 1 << 30); 4], ..needs(&[64]) }, "global memory"),
        ];
        for (n, expected) in cases {
            let e = check(&d, &n).unwrap_err();
            assert!(e.contains(expected), "{e:?} should mention {expected:?}");
        }
    }

    #[test]
    fn nvidia_global_ids_stay_below_2_to_the_31() {
        let mut gpu = small_device();
        gpu.nvidia = Some(crate::device::NvidiaInfo {
            compute_capability: (9, 0),
            registers_per_block: 65536,
            warp_size: 32,
            pci_bus_id: None,
            pci_slot_id: None,
        });
        let under = Needs { total_items: (1 << 31) - 1, ..needs(&[64]) };
        let over = Needs { total_items: 1 << 31, ..needs(&[64]) };
        assert_eq!(check(&gpu, &under), Ok(()));
        assert!(check(&gpu, &over).unwrap_err().contains("2^31"));
        // Other devices take 64-bit ids.
        assert_eq!(check(&small_device(), &over), Ok(()));
    }
}
