//! Driver errors as one line each: the result's name and what it usually
//! means for a port kernel.

use cudarc::driver::sys::CUresult;
use cudarc::driver::DriverError;

use crate::error::VerifyError;

/// The name of a driver result (`CUDA_ERROR_ILLEGAL_ADDRESS`) and what it
/// usually means for a port kernel. Never calls the driver, so it works
/// when the driver is gone.
pub fn describe(r: CUresult) -> String {
    let name = format!("{r:?}");
    let hint = match r {
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS => {
            "the kernel read or wrote outside its arrays (run with --debug on the simulator to find the thread)"
        }
        CUresult::CUDA_ERROR_LAUNCH_FAILED => "the kernel faulted while running",
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => "the device has too little free memory for these arrays",
        CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => {
            "too many registers or too much shared memory for this block size"
        }
        CUresult::CUDA_ERROR_LAUNCH_TIMEOUT => "the kernel ran past the watchdog's limit",
        CUresult::CUDA_ERROR_INVALID_PTX | CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => {
            "the driver cannot compile this PTX: pass an older --arch, or update the NVIDIA driver"
        }
        CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU => "the PTX targets a newer GPU than this one",
        CUresult::CUDA_ERROR_NO_DEVICE => "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)",
        CUresult::CUDA_ERROR_STUB_LIBRARY => {
            "the libcuda.so loaded is the CUDA toolkit's stub, not the driver's: take the toolkit's lib64/stubs off LD_LIBRARY_PATH"
        }
        CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => {
            "the NVIDIA kernel module and libcuda are different driver versions: reboot, or reinstall the driver"
        }
        CUresult::CUDA_ERROR_INVALID_VALUE => "a launch argument or size is invalid",
        _ => "",
    };
    if hint.is_empty() {
        name
    } else {
        format!("{name} ({hint})")
    }
}

pub(super) fn cuda(e: DriverError) -> VerifyError {
    VerifyError::Cuda(describe(e.0))
}

/// `CUDA_ERROR_OUT_OF_MEMORY` with its hint and what was asked.
pub(super) fn out_of_memory(what: String) -> VerifyError {
    VerifyError::Cuda(format!(
        "{}: {what}",
        describe(CUresult::CUDA_ERROR_OUT_OF_MEMORY)
    ))
}
