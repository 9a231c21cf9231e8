//! Each kernel's parameters as the program was built, to check a launch's arguments before
//! anything is enqueued: read from the flattened source by the declaration reader (names,
//! lines, struct layouts, which pointers the body writes), cross-checked against the driver's
//! `clGetKernelArgInfo` (the program is built with `-cl-kernel-arg-info`). Where the two
//! disagree, or the reader cannot read the source, the driver's answer is used and the
//! messages say so.

use std::collections::HashMap;

use hetdsl_decl::argcheck::{self, HostArg};
use hetdsl_decl::clsig::{self, AddrSpace, Param, StructDef};
use hetdsl_decl::flatten::origin;

use crate::error::{Error, Result};

/// One kernel argument as the driver describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DriverArg {
    pub(crate) name: String,
    pub(crate) space: AddrSpace,
    /// The type as the driver names it: `float*`, `int`, `float4*`.
    pub(crate) type_name: String,
    pub(crate) is_const: bool,
}

/// Line numbers of parameters the driver described: they have no place in the source.
const NO_LINE: usize = usize::MAX;

struct Signature {
    /// The parameters the user passes (the hidden NDRange one excluded), when known.
    params: Option<Vec<Param>>,
    structs: Vec<StructDef>,
    /// How many arguments the user passes, as the driver counts them.
    driver_count: Option<usize>,
    /// Said at the end of every message about this kernel: why the check is the driver's.
    note: String,
}

/// The parameters of every kernel of a program.
pub(crate) struct Signatures {
    source_name: String,
    /// The flattened source as the user wrote it (before the built-ins' rewrite).
    text: String,
    kernels: HashMap<String, Signature>,
}

/// What the driver reports, the hidden NDRange parameter dropped.
pub(crate) type DriverInfo = Option<Vec<DriverArg>>;

impl Signatures {
    /// `driver` gives each kernel's argument info (`None` when the driver has none); `hidden`
    /// lists the kernels that take the built-ins' hidden last parameter.
    pub(crate) fn read(
        source_name: &str,
        text: &str,
        options: &str,
        kernel_names: &[String],
        driver: &HashMap<String, DriverInfo>,
    ) -> Signatures {
        let read = clsig::read_with_options(text, options);
        let at = |line: usize| {
            let (file, n) = origin(text, line, source_name);
            format!("{file}:{n}")
        };
        let mut kernels = HashMap::new();
        for name in kernel_names {
            let driver_args = driver.get(name).cloned().flatten();
            let from_driver = |why: String| {
                let params = driver_args.as_ref().map(|d| d.iter().map(driver_param).collect());
                let note = match &driver_args {
                    Some(_) => format!(" ({why}; checked against the driver's argument info)"),
                    None => format!(" ({why}, and the driver gives no argument info)"),
                };
                Signature {
                    params,
                    structs: Vec::new(),
                    driver_count: driver_args.as_ref().map(Vec::len),
                    note,
                }
            };
            let sig = match &read {
                Err(e) => {
                    from_driver(format!("the declaration reader cannot read {}: {e}", at(e.line)))
                }
                Ok(src) => match src.kernel(name).map(|k| (k, &k.params)) {
                    None => from_driver(format!(
                        "the declaration reader finds no kernel `{name}` in the source"
                    )),
                    Some((k, Err(e))) => from_driver(format!(
                        "the declaration reader cannot read the parameters of `{name}` at {}: {e}",
                        at(k.line)
                    )),
                    Some((_, Ok(params))) => {
                        match driver_args.as_ref().and_then(|d| disagreement(params, d)) {
                            Some(why) => from_driver(format!(
                                "the declaration reader and the driver disagree: {why}"
                            )),
                            None => Signature {
                                params: Some(params.clone()),
                                structs: src.structs.clone(),
                                driver_count: driver_args.as_ref().map(Vec::len),
                                note: String::new(),
                            },
                        }
                    }
                },
            };
            kernels.insert(name.clone(), sig);
        }
        Signatures { source_name: source_name.to_string(), text: text.to_string(), kernels }
    }

    /// Whether parameter `name` of `kernel` is a `__global` pointer, as the declaration reader
    /// read it (not known where only the driver's argument info is).
    pub(crate) fn is_global_pointer(&self, kernel: &str, name: &str) -> bool {
        let Some(sig) = self.kernels.get(kernel).filter(|s| s.note.is_empty()) else {
            return false;
        };
        let p = sig.params.iter().flatten().find(|p| p.name == name);
        p.and_then(|p| p.pointer).is_some_and(|ptr| ptr.space == AddrSpace::Global)
    }

    /// The parameter at `index` of `kernel`, when known.
    pub(crate) fn param(&self, kernel: &str, index: usize) -> Option<&Param> {
        self.kernels.get(kernel)?.params.as_ref()?.get(index)
    }

    /// `error`, with the parameter named (as declared, with its file and line) when it is
    /// about an argument and does not name it yet.
    pub(crate) fn name_argument(&self, kernel: &str, error: Error) -> Error {
        match error {
            Error::BadArgument { index, reason } if !reason.contains("parameter `") => {
                let reason = match self.param(kernel, index) {
                    Some(p) => {
                        format!(
                            "{}: {reason}",
                            argcheck::param_phrase(&p.name, &p.text, &self.at(p.line))
                        )
                    }
                    None => reason,
                };
                Error::BadArgument { index, reason }
            }
            other => other,
        }
    }

    fn at(&self, line: usize) -> String {
        if line == NO_LINE {
            return format!("{} (as the driver reports it)", self.source_name);
        }
        let (file, n) = origin(&self.text, line, &self.source_name);
        format!("{file}:{n}")
    }

    /// Checks `host` (the user's arguments, in order) against `kernel`'s parameters. A kernel
    /// not in the program is left to the launch to report.
    pub(crate) fn check(&self, kernel: &str, host: &[HostArg]) -> Result<()> {
        let Some(sig) = self.kernels.get(kernel) else { return Ok(()) };
        let count = sig.params.as_ref().map(Vec::len).or(sig.driver_count);
        if let Some(count) = count {
            if count != host.len() {
                let names = sig.params.as_ref().map_or(String::new(), |p| {
                    let names: Vec<_> = p.iter().map(|p| format!("`{}`", p.name)).collect();
                    format!(": {}", names.join(", "))
                });
                return Err(Error::BadArgument {
                    index: host.len().min(count),
                    reason: format!(
                        "kernel `{kernel}` takes {count} arguments, {} given{names}{}",
                        host.len(),
                        sig.note
                    ),
                });
            }
        }
        let Some(params) = &sig.params else { return Ok(()) };
        let at = |line: usize| self.at(line);
        for (index, (p, h)) in params.iter().zip(host).enumerate() {
            argcheck::check(p, h, &at, &sig.structs).map_err(|why| Error::BadArgument {
                index,
                reason: format!("{why}{}", sig.note),
            })?;
        }
        Ok(())
    }
}

/// A parameter as the driver describes it, read by the declaration reader from a one-line
/// declaration (a type the reader does not know stays unchecked).
fn driver_param(d: &DriverArg) -> Param {
    let konst = if d.is_const { "const " } else { "" };
    let space = if d.space == AddrSpace::Private { "" } else { d.space.name() };
    let decl = format!("{space} {konst}{} {}", d.type_name, d.name);
    let parsed = clsig::parse(&format!("__kernel void k({decl}) {{}}"));
    let param = parsed.ok().and_then(|s| s.kernels.into_iter().next()).and_then(|k| k.params.ok());
    match param.and_then(|mut p| p.pop()) {
        Some(mut p) => {
            p.line = NO_LINE;
            p
        }
        None => Param {
            name: d.name.clone(),
            ty: clsig::Ty::Opaque(d.type_name.clone()),
            pointer: d
                .type_name
                .ends_with('*')
                .then_some(clsig::Pointer { space: d.space, const_pointee: d.is_const }),
            value_space: None,
            unsupported: None,
            text: decl.trim().to_string(),
            line: NO_LINE,
            written_at: None,
            atomic_value_at: None,
            updates: Vec::new(),
            value_read_at: None,
        },
    }
}

/// Where the reader's parameters and the driver's differ in count or kind, as a phrase.
fn disagreement(params: &[Param], driver: &[DriverArg]) -> Option<String> {
    if params.len() != driver.len() {
        return Some(format!(
            "the reader finds {} parameters, the driver {}",
            params.len(),
            driver.len()
        ));
    }
    for (i, (p, d)) in params.iter().zip(driver).enumerate() {
        let reader_space = p.pointer.map(|ptr| ptr.space);
        let driver_space = d.type_name.contains('*').then_some(d.space);
        if reader_space != driver_space {
            let show = |s: Option<AddrSpace>| {
                s.map_or("a value".to_string(), |s| format!("a `{}` pointer", s.name()))
            };
            return Some(format!(
                "parameter {i} is {} to the reader, {} to the driver",
                show(reader_space),
                show(driver_space)
            ));
        }
        if let Some(ptr) = p.pointer.filter(|ptr| ptr.space == AddrSpace::Global) {
            if ptr.const_pointee != d.is_const {
                return Some(format!(
                    "parameter {i} points to {} data to the reader, {} to the driver",
                    if ptr.const_pointee { "const" } else { "non-const" },
                    if d.is_const { "const" } else { "non-const" }
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetdsl_decl::argcheck::{HostType, Prim};

    const SRC: &str = "__kernel void k(__global const float* x, __global float* y, int n) {\n\
                       y[0] = x[0] * n;\n}\n";

    fn driver(space: AddrSpace, type_name: &str, is_const: bool, name: &str) -> DriverArg {
        DriverArg { name: name.into(), space, type_name: type_name.into(), is_const }
    }

    fn agreeing() -> Vec<DriverArg> {
        vec![
            driver(AddrSpace::Global, "float*", true, "x"),
            driver(AddrSpace::Global, "float*", false, "y"),
            driver(AddrSpace::Private, "int", false, "n"),
        ]
    }

    fn read(driver_args: DriverInfo) -> Signatures {
        let driver = HashMap::from([("k".to_string(), driver_args)]);
        Signatures::read("a.cl", SRC, "", &["k".to_string()], &driver)
    }

    fn scalar(p: Prim) -> HostArg {
        HostArg::Scalar { ty: Some(HostType::Prim(p)), size: p.size() }
    }

    fn buffer(p: Prim, writes: bool) -> HostArg {
        HostArg::Buffer { ty: Some(HostType::Prim(p)), writes, reads: !writes, merged: None }
    }

    #[test]
    fn the_driver_and_the_reader_agreeing_the_readers_parameters_are_used() {
        let sigs = read(Some(agreeing()));
        let ok = [buffer(Prim::F32, false), buffer(Prim::F32, true), scalar(Prim::I32)];
        assert!(sigs.check("k", &ok).is_ok());
        // The reader's line and the body's writes are known.
        let e = sigs
            .check("k", &[buffer(Prim::F32, false), buffer(Prim::F32, false), scalar(Prim::I32)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("a.cl:1") && e.contains("writes through it at a.cl:2"), "{e}");
    }

    #[test]
    fn a_disagreement_is_checked_against_the_driver_and_said() {
        // The driver says `y` is const: its answer is used, and the message says why.
        let mut d = agreeing();
        d[1].is_const = true;
        let sigs = read(Some(d));
        let e = sigs
            .check("k", &[buffer(Prim::F32, false), buffer(Prim::F32, true), scalar(Prim::I32)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("parameter `y`") && e.contains("`const`"), "{e}");
        assert!(e.contains("disagree: parameter 1 points to non-const data to the reader"), "{e}");
        // A count the driver does not share.
        let mut d = agreeing();
        d.pop();
        let e = read(Some(d)).check("k", &[buffer(Prim::F32, false)]).unwrap_err().to_string();
        assert!(e.contains("takes 2 arguments, 1 given"), "{e}");
        assert!(e.contains("the reader finds 3 parameters, the driver 2"), "{e}");
        // A value where the reader has a pointer.
        let mut d = agreeing();
        d[0] = driver(AddrSpace::Private, "ulong", false, "x");
        let e = read(Some(d))
            .check("k", &[buffer(Prim::F32, false), buffer(Prim::F32, true), scalar(Prim::I32)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("parameter 0 is a `__global` pointer to the reader, a value to the driver"),
            "{e}"
        );
    }

    #[test]
    fn without_the_driver_the_reader_decides() {
        let sigs = read(None);
        let e = sigs.check("k", &[buffer(Prim::F32, false)]).unwrap_err().to_string();
        assert!(e.contains("takes 3 arguments, 1 given: `x`, `y`, `n`"), "{e}");
        let e = sigs
            .check("k", &[buffer(Prim::F32, false), scalar(Prim::U64), scalar(Prim::I32)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("buffer of `f32`, found a scalar `u64`"), "{e}");
    }

    #[test]
    fn driver_descriptions_read_as_parameters() {
        let p = driver_param(&driver(AddrSpace::Global, "float4*", true, "v"));
        assert_eq!(p.ty, clsig::Ty::Vector(clsig::Scalar::Float, 4));
        assert_eq!(p.pointer.map(|p| (p.space, p.const_pointee)), Some((AddrSpace::Global, true)));
        let p = driver_param(&driver(AddrSpace::Private, "uint", false, "n"));
        assert_eq!((p.ty, p.pointer), (clsig::Ty::Scalar(clsig::Scalar::UInt), None));
        // A struct the one-line declaration cannot know stays unchecked by type.
        let p = driver_param(&driver(AddrSpace::Global, "Particle*", false, "ps"));
        assert!(matches!(p.ty, clsig::Ty::Opaque(_)) && p.pointer.is_some());
        let p = driver_param(&driver(AddrSpace::Local, "float*", false, "tmp"));
        assert_eq!(p.pointer.map(|p| p.space), Some(AddrSpace::Local));
    }
}
