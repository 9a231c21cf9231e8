//! Helpers for the code `kernel!` and `#[coexec]` generate. Not a public API: names and
//! signatures change with the macros.

use std::sync::{Mutex, PoisonError};

use crate::balance::Balancer;
use crate::device::DeviceInfo;
use crate::engine::{KernelSource, Program, Runtime, Session};
use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::pod::Pod;
pub use hetdsl_decl::argcheck::{HostType, Lanes, Prim};
pub use hetdsl_decl::declcheck::{DeclParam, DeclRole, Dir, RustTy};

/// The bytes of a value, to pass by copy.
///
/// # Safety
/// `T` must be plain data without padding-dependent meaning: the macros call this only for
/// types whose layout they checked against the kernel (primitives, arrays of them, and user
/// types with asserted layouts and `Pod` fields).
pub unsafe fn value_bytes<T: Copy + 'static>(value: &T) -> Vec<u8> {
    // SAFETY: the caller guarantees T is plain data; `value` is a valid, initialised T.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

/// The bytes of a slice, for a buffer the kernel reads.
///
/// # Safety
/// As for [`value_bytes`].
pub unsafe fn slice_bytes<T: Copy + 'static>(data: &[T]) -> &[u8] {
    // SAFETY: the caller guarantees T is plain data; the slice is valid for its byte length.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) }
}

/// The bytes of a slice, for a buffer the kernel writes.
///
/// # Safety
/// As for [`value_bytes`], and every bit pattern must be a valid `T` (the checked fields are
/// `Pod`), since the kernel's bytes are written over the values.
pub unsafe fn slice_bytes_mut<T: Copy + 'static>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; the borrow is exclusive for the returned lifetime.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), size_of_val(data)) }
}

/// Compiles only for plain data: the generated code calls it on each field of a user struct.
pub fn assert_pod<T: Pod>(_: &T) {}

/// Compiles only for plain data: `#[derive(Pod)]` calls it with each field's type.
pub fn assert_pod_type<T: Pod>() {}

/// `Self` is the type `P`: the generated code asserts that a primitive's name in a declaration
/// (`u32`) means the primitive and not a type of the user's under that name.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the primitive `{P}`: that name means another type here",
    label = "the kernel expects the primitive `{P}`",
    note = "rename the type that shadows `{P}` where the declaration is"
)]
pub trait IsPrimitive<P> {}
impl<T> IsPrimitive<T> for T {}

/// Compiles only when `T` is `P` (see [`IsPrimitive`]).
pub fn assert_primitive<T: IsPrimitive<P>, P>() {}

/// `Self` is the type `P`: the generated code asserts that a type named otherwise than the
/// primitive a kernel's parameter needs (a type alias, `type Real = f32;`) is that primitive,
/// which the macro cannot see through the name.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `{P}`, the type the kernel's parameter needs",
    label = "this must be `{P}` (or a type alias of it)",
    note = "a type alias stands for the type it names: an alias of `{P}` fits here, an alias of \
            another type does not"
)]
pub trait Same<P> {}
impl<T> Same<T> for T {}

/// Compiles only when `T` is `P` (see [`Same`]).
pub fn assert_same<T: Same<P>, P>() {}

/// The size of the field that `field` selects, at compile time.
pub const fn size_of_field<T, F>(_field: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// What the field that `field` selects is made of, at compile time.
pub const fn field_lanes<T, F: Pod>(_field: fn(&T) -> &F) -> Lanes {
    F::LANES
}

/// What plain data `T` is made of, at compile time; compiles only for plain data.
pub const fn pod_lanes<T: Pod>() -> Lanes {
    T::LANES
}

/// The balancer a declaration names (validated at compile time against the same grammar).
pub fn balancer(spec: &str) -> Result<Box<dyn Balancer>> {
    Ok(spec.parse::<crate::balance::BalancerSpec>()?.build())
}

/// Programs built by `#[coexec]` functions, one per device selection, kept for the process.
pub struct ProgramCache {
    built: Mutex<Vec<(Vec<DeviceInfo>, &'static Program)>>,
}

impl ProgramCache {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        ProgramCache { built: Mutex::new(Vec::new()) }
    }

    /// The program for `rt`'s devices, built from `source` with the build `options` at the
    /// first call.
    pub fn get(
        &self,
        rt: &Runtime,
        source: fn() -> KernelSource,
        options: &str,
    ) -> Result<&'static Program> {
        let devices = rt.devices();
        // A panic while building leaves the list as it was: keep using it.
        let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, program)) = built.iter().find(|(d, _)| *d == devices) {
            return Ok(program);
        }
        // Leaked on purpose: the cache lives in a `static`, for the rest of the process.
        let program: &'static Program =
            Box::leak(Box::new(rt.program_with_options(&source(), options)?));
        built.push((devices, program));
        Ok(program)
    }
}

impl ProgramCache {
    /// Whether `session` is a session of one of the programs built here.
    fn holds(&self, session: &Session) -> bool {
        let built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        built.iter().any(|(_, program)| same_program(program, session))
    }
}

/// Whether `session` was made from `program` (not from another build of any source).
fn same_program(program: &Program, session: &Session) -> bool {
    // Each build makes its own signature table, which its sessions share.
    std::sync::Arc::ptr_eq(&program.signatures, &session.signatures)
}

/// A declared kernel bound to a session of its own program: what a generated session type
/// holds. Made only through the checks below, so that a launch never runs another program's
/// kernel of the same name (which a signature check alone would not tell apart).
#[derive(Clone, Copy)]
pub struct Bound<'s> {
    session: &'s Session,
}

impl<'s> Bound<'s> {
    /// `session` bound for `kernel` of `program` (a `kernel!` struct's program).
    pub fn new(program: &Program, session: &'s Session, kernel: &str) -> Result<Self> {
        if same_program(program, session) {
            return Ok(Bound { session });
        }
        Err(another_program(session, kernel, "`session()` of the same value"))
    }

    /// `session` bound for `kernel` of a `#[coexec]` function, whose programs are in `cache`.
    pub fn cached(cache: &ProgramCache, session: &'s Session, kernel: &str) -> Result<Self> {
        if cache.holds(session) {
            return Ok(Bound { session });
        }
        Err(another_program(session, kernel, "the function module's `session(&rt)`"))
    }

    pub fn session(self) -> &'s Session {
        self.session
    }
}

fn another_program(session: &Session, kernel: &str, how: &str) -> Error {
    Error::BadConfig(format!(
        "`{kernel}` was given a session of another program (built from `{}`): a declared kernel \
         runs on sessions of the program it built itself; make the session with {how}",
        session.source_name
    ))
}

/// Implemented by nothing: `on` of a kernel with a merged output asks it of the session, so
/// that calling it is a compile error that says why.
#[diagnostic::on_unimplemented(
    message = "this kernel has an output merged across devices (`merge = \"…\"`), which cannot be \
               a session buffer",
    label = "a kernel with a merged output runs one-shot only",
    note = "every device writes the whole of a merged output and the copies are reduced on the \
            host, while a session keeps each element on the one device that wrote it: call the \
            kernel's one-shot `run` on slices"
)]
pub trait MergedOutputOnSession {
    fn session(&self) -> &Session;
}

/// `error`, with the parameter named as the declaration names it (`names`: every parameter, in
/// the kernel's order) when it is about one argument.
pub fn name_argument(error: Error, names: &[&str]) -> Error {
    match error {
        Error::BadArgument { index, reason } => match names.get(index) {
            Some(name) => Error::BadDeclaredArgument { index, name: name.to_string(), reason },
            None => Error::BadArgument { index, reason },
        },
        other => other,
    }
}

/// An integer a pattern side may name: a `const` or a scalar parameter of one of these types.
#[diagnostic::on_unimplemented(
    message = "a side of a pattern counts elements, so it must be an integer, not `{Self}`",
    label = "not an integer",
    note = "a side of a pattern is a positive integer literal, a `const` of an integer type, or \
            a scalar parameter of an integer type (`i32`, `u32`, `usize`, …)"
)]
pub trait PatternSide: Copy {
    fn to_i128(self) -> i128;
}

macro_rules! pattern_sides {
    ($($t:ty),*) => {$(
        impl PatternSide for $t {
            fn to_i128(self) -> i128 {
                // Lossless: every one of these types fits an i128.
                self as i128
            }
        }
    )*};
}
pattern_sides!(i8, u8, i16, u16, i32, u32, i64, u64, isize, usize);

/// The value of a pattern side, widened so that a negative or too large one can be refused.
pub fn pattern_side<T: PatternSide>(value: T) -> i128 {
    value.to_i128()
}

/// The pattern `a:b` of argument `index` (`name` in the declaration) whose sides are known only
/// now, each given as written and with its value: checked with the rules and messages of the
/// macros' compile-time check of literal patterns.
pub fn ratio(
    index: usize,
    name: &str,
    a: (&str, i128),
    b: (&str, i128),
    items_per_group: u64,
) -> Result<Pattern> {
    use hetdsl_decl::pattern::{fit_error, side_error};
    let bad = |why: String| Error::BadDeclaredArgument {
        index,
        name: name.to_string(),
        reason: format!("pattern `{}:{}`: {why}", a.0, b.0),
    };
    for (text, value) in [a, b] {
        if let Some(why) = side_error(text, value) {
            return Err(bad(why));
        }
    }
    // Both fit a u64: `side_error` refuses the rest.
    let (x, y) = (a.1 as u64, b.1 as u64);
    if let Some(why) = fit_error(x, y, items_per_group) {
        return Err(bad(why));
    }
    Ok(Pattern::Ratio { a: x, b: y })
}

/// A parameter of a `kernel!` declaration, for the check of a source loaded at run time: the
/// declaration's view of it and the size and alignment of its Rust type (of the value, or of
/// the elements), and for a type standing for a vector at compile time, the primitives it is
/// made of (`Lanes::Unknown` otherwise).
pub struct DeclArg {
    pub decl: DeclParam,
    pub size: usize,
    pub align: usize,
    pub lanes: Lanes,
}

/// Checks a source given at run time against a `kernel!` declaration (`decl`, every parameter
/// in order; `local`, its work-group size), with the rules and words of the macros'
/// compile-time check, before it is built. `options`: the declaration's build options, whose
/// `-D` defines choose the `#if` branches.
pub fn check_source(
    source: &KernelSource,
    options: &str,
    kernel: &str,
    local: &[u64],
    decl: &[DeclArg],
) -> Result<()> {
    use hetdsl_decl::{clsig, declcheck, flatten::origin};
    let at = |line: usize| {
        let (file, n) = origin(&source.text, line, &source.name);
        format!("{file}:{n}")
    };
    let mismatch = |problems: Vec<String>| Error::SourceMismatch {
        kernel: kernel.to_string(),
        file: source.name.clone(),
        problems,
    };
    // The declaration's options were checked when it compiled.
    let defines = clsig::defines_from_options(options).unwrap_or_default();
    let cl = clsig::parse_with_defines(&source.text, &defines)
        .map_err(|e| mismatch(vec![declcheck::unreadable_source(&at(e.line), &e)]))?;
    let params = declcheck::kernel_params(&cl, kernel, &source.name, decl.len(), &at)
        .map_err(|(_, why)| mismatch(vec![why]))?;
    // Found by `kernel_params`; first, as the macros report it first.
    let mut problems = match cl.kernel(kernel) {
        Some(k) => declcheck::ndrange_problems(k, local, &at),
        None => Vec::new(),
    };
    for (arg, p) in decl.iter().zip(params) {
        let out = declcheck::check_param_resolved(&arg.decl, p, &cl, &at);
        problems.extend(out.problems.into_iter().map(|p| p.message));
        problems.extend(out.fit.and_then(|fit| layout_problem(&fit, arg, &cl, &at)));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(mismatch(problems))
    }
}

/// What the compiler proves of a user type for the source read at compile time, compared at
/// run time for another source: its size (and a struct's alignment), and that a vector's
/// newtype holds the vector's primitive. Field offsets are not
/// known here; a struct of the same size and alignment whose fields moved is not caught.
fn layout_problem(
    fit: &hetdsl_decl::declcheck::Fit,
    arg: &DeclArg,
    cl: &hetdsl_decl::clsig::Source,
    at: &dyn Fn(usize) -> String,
) -> Option<String> {
    use hetdsl_decl::declcheck::{self, Fit};
    match fit {
        Fit::Newtype { size, desc, .. } if *size != arg.size as u64 => {
            Some(format!("`{}`: {}", arg.decl.name, declcheck::newtype_size_message(desc)))
        }
        // The same size is not enough: an `[i32; 4]` newtype has the size of a `float4`.
        Fit::Newtype { desc, elem, three_lanes, .. } => {
            let want = Prim::from_name(elem)?;
            (!arg.lanes.hold(want, *three_lanes)).then(|| {
                format!("`{}`: {}", arg.decl.name, declcheck::newtype_kind_message(desc, elem))
            })
        }
        Fit::Struct(i) => {
            let def = &cl.structs[*i];
            let layout = def.layout?;
            let line = at(def.line);
            let why = if layout.size != arg.size as u64 {
                declcheck::struct_size_message(&def.name, layout.size, &line)
            } else if layout.align != arg.align as u64 {
                declcheck::struct_align_message(&def.name, layout.align, &line)
            } else {
                return None;
            };
            Some(format!("`{}`: {why}", arg.decl.name))
        }
        _ => None,
    }
}

/// `T`, seen through the lifetime `'a` of a generated session method: the method asks
/// `Lazy<'a, T>: Elem` in its `where` clause, which mentions `'a` and so is proved where the
/// method is called rather than where it is declared. A declaration whose type is not plain
/// data thus shows only the errors of the checks made for the one-shot form, on the
/// declaration, not the same again from the session form's code.
pub struct Lazy<'a, T>(std::marker::PhantomData<(&'a (), T)>);

/// `Lazy<'a, T>` is `T`, plain data (see [`Lazy`]); `cast` passes a value through.
pub trait Elem<S> {
    type T: Pod;
    fn cast(value: S) -> Self::T;
}

impl<T: Pod> Elem<T> for Lazy<'_, T> {
    type T = T;
    fn cast(value: T) -> T {
        value
    }
}
