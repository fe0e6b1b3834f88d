//! What the mount serves its files from: one emulated disk ([`Drive`]) or an array of them
//! under a RAID personality ([`ArrayDrive`]). The file system hands either the same requests
//! and shows its counters under `.iowatt`.

use iowatt_sim::raid::Request;

use crate::array::ArrayDrive;
use crate::control;
use crate::drive::{Drive, Pending, Reply, SetError};

pub trait Device: Send + Sync + 'static {
    /// The mount's clock, ns.
    fn now_ns(&self) -> u64;
    /// `request` (offset and bytes on the device; a web file's metadata blocks for an array
    /// with a file system model) arrives with `pending`'s answer.
    fn submit(&self, pending: Pending<Reply>, request: Request);
    /// The files under `.iowatt`.
    fn control_files(&self) -> Vec<String>;
    /// A control file's text now.
    fn render(&self, path: &str) -> String;
    /// Sets the stimulus of a vibration curve, if the device has one.
    fn set_stimulus(&self, value: f64) -> Result<f64, SetError>;
}

impl Device for Drive<Reply> {
    fn now_ns(&self) -> u64 {
        Drive::now_ns(self)
    }

    fn submit(&self, pending: Pending<Reply>, request: Request) {
        Drive::submit(self, pending, request.offset, request.bytes);
    }

    fn control_files(&self) -> Vec<String> {
        control::DISK_FILES.iter().map(|f| f.to_string()).collect()
    }

    fn render(&self, path: &str) -> String {
        if path == "streams.json" {
            control::streams(&self.streams())
        } else {
            control::read(path, &self.counters(), self.model(), self.stimulus_range())
        }
    }

    fn set_stimulus(&self, value: f64) -> Result<f64, SetError> {
        Drive::set_stimulus(self, value)
    }
}

impl Device for ArrayDrive<Reply> {
    fn now_ns(&self) -> u64 {
        ArrayDrive::now_ns(self)
    }

    fn submit(&self, pending: Pending<Reply>, request: Request) {
        ArrayDrive::submit(self, pending, request);
    }

    fn control_files(&self) -> Vec<String> {
        control::array_files(self.disks())
    }

    fn render(&self, path: &str) -> String {
        control::array_read(path, &self.counters(), self.model(), self.personality())
    }

    fn set_stimulus(&self, _value: f64) -> Result<f64, SetError> {
        Err(SetError::NoCurve)
    }
}
