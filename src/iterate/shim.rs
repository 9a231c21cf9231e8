// TEMPORARY (not committed): stands in for the session API until it is merged.
#![allow(dead_code, unused)]
use hetdsl::{Pattern, Pod, Program, Report, Result};
use std::marker::PhantomData;
pub struct Session;
pub struct Buffer<T>(PhantomData<T>);
pub struct SessionLaunch<'a>(PhantomData<&'a ()>);
pub trait ProgramExt {
    fn session_on(&self, d: &[usize]) -> Result<Session>;
}
impl ProgramExt for Program {
    fn session_on(&self, d: &[usize]) -> Result<Session> {
        Err(hetdsl::Error::BadRange("no session yet".into()))
    }
}
impl Session {
    pub fn buffer_from<T: Pod>(&self, data: &[T]) -> Result<Buffer<T>> {
        unimplemented!()
    }
    pub fn buffer<T: Pod>(&self, len: usize) -> Result<Buffer<T>> {
        unimplemented!()
    }
    pub fn launch(&self, k: &str) -> SessionLaunch<'_> {
        unimplemented!()
    }
}
impl<T: Pod> Buffer<T> {
    pub fn to_vec(&self) -> Result<Vec<T>> {
        unimplemented!()
    }
}
impl<'a> SessionLaunch<'a> {
    pub fn global(self, s: &[usize]) -> Self {
        self
    }
    pub fn local(self, s: &[usize]) -> Self {
        self
    }
    pub fn input<T: Pod>(self, b: &Buffer<T>, p: Pattern) -> Self {
        self
    }
    pub fn output<T: Pod>(self, b: &mut Buffer<T>, p: Pattern) -> Self {
        self
    }
    pub fn inout<T: Pod>(self, b: &mut Buffer<T>, p: Pattern) -> Self {
        self
    }
    pub fn scalar<T: Pod>(self, v: T) -> Self {
        self
    }
    pub fn run(self) -> Result<Report> {
        unimplemented!()
    }
}
pub struct Moved {
    pub host_to_device: u64,
    pub device_to_host: u64,
    pub device_to_device: u64,
}
pub trait ReportExt {
    fn moved(&self) -> Moved;
}
impl ReportExt for Report {
    fn moved(&self) -> Moved {
        Moved { host_to_device: 0, device_to_host: 0, device_to_device: 0 }
    }
}
pub trait Halo {
    fn halo(r: u64) -> Pattern;
}
impl Halo for Pattern {
    fn halo(r: u64) -> Pattern {
        Pattern::Whole
    }
}
