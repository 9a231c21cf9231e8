//! Procedural macros of hetdsl: [`kernel!`] and [`#[coexec]`](macro@coexec). Use them through
//! the `hetdsl` crate, which re-exports both.
//!
//! Both read a declaration of an OpenCL kernel written as a Rust function signature, check it
//! against the kernel's real signature at compile time, and generate typed Rust code that
//! co-executes the kernel on every device through the hetdsl runtime.
//!
//! Layout of the crate: `parse` (the macro input), `check` (declaration against kernel),
//! `expand` (code generation). The reader of OpenCL C declarations (`clsig`), the include
//! flattener and the balancer registry live in `hetdsl-decl`, shared with the runtime.

mod check;
mod errors;
mod expand;
mod parse;
mod placement;
mod pod;
mod role;

use hetdsl_decl::clsig;

use proc_macro::TokenStream;

/// Declares a struct that co-executes one OpenCL kernel, checked against the kernel at compile
/// time.
///
/// ```ignore
/// hetdsl::kernel! {
///     /// y = a·x + y, on every device.
///     #[kernel(file = "kernels/saxpy.cl", local = 64, balancer = "dynamic:32")]
///     pub struct Saxpy {
///         fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
///     }
/// }
///
/// let rt = hetdsl::Runtime::new()?;
/// let saxpy = Saxpy::new(&rt)?;                        // builds the program once
/// let report = saxpy.run(n, 2.0, &x, &mut y, n as i32)?; // global size first, then the arguments
/// let report = saxpy.launch(n, 2.0, &x, &mut y, n as i32)?
///     .balancer(Box::new(hetdsl::balance::Dynamic::packages(8)))   // override at call time
///     .run()?;
/// ```
///
/// # On session buffers
/// `Saxpy::session()` makes a session of the kernel's program and `saxpy.on(&session)?` binds
/// the kernel to it as a generated `SaxpyOn<'s>`, whose `run` and `launch` take the arguments of
/// the one-shot ones in the same order with each `&[T]` as `&hetdsl::Buffer<T>` and each
/// `&mut [T]` as `&mut hetdsl::Buffer<T>`: the buffers stay on the devices across launches.
///
/// ```ignore
/// let session = saxpy.session()?;
/// let on = saxpy.on(&session)?;        // a session of another program is an error
/// let x = session.buffer_from(&x)?;
/// let mut y = session.buffer_from(&y)?;
/// for _ in 0..steps {
///     on.run(n, 2.0, &x, &mut y, n as i32)?;
/// }
/// ```
///
/// A kernel with a merged output (`merge = "…"`) has no session form: its `on` does not compile.
///
/// Besides `new`, `run`, `verify` and `launch`, the struct has `with_source(&rt, &source)`, which
/// builds a version of the kernel read at run time after checking it against the declaration
/// with the compile-time check's rules and words (`hetdsl::Error::SourceMismatch`), and
/// `PARAMETERS`, the parameters' names as declared: errors of `run` and `verify` about an
/// argument name it with them (`hetdsl::Error::BadDeclaredArgument`).
///
/// # Options (`#[kernel(..)]`)
/// - `file = "path.cl"` (required): the OpenCL C source, relative to the crate's `Cargo.toml`.
///   It is read with its `#include`s (searched beside the including file, then in `include`
///   directories) and embedded in the binary; a change to any of those files rebuilds the crate.
/// - `local = 64`, `local = [16, 16]` or `local = [8, 8, 4]` (required): the work-group size,
///   and so the NDRange's dimensions: `run` takes `global: usize` (1-D), `global: [usize; 2]`
///   (2-D) or `global: [usize; 3]` (3-D).
/// - `name = "k"`: the kernel's name in the source, when it differs from the Rust `fn` name.
/// - `balancer = "spec"`: any balancer of `hetdsl::balance::BalancerSpec` (`sigmoid`,
///   `dynamic:64`, `hguided:k=2,m=1`, …); default: the runtime's default (Sigmoid).
/// - `include = "dir"` or `include = ["a", "b"]`: more include directories.
/// - `defines = ["BLOCK_SIZE=16", "USE_DOUBLE"]`: macros defined for the build, as `-D` options.
///   The checker evaluates `#if`/`#ifdef` with them, so it checks the branch that is built.
/// - `options = "-cl-mad-enable"`: more build options (a `-D` in them counts as a define too).
///
/// # Parameters, in the kernel's order
/// - a value: `n: i32` for `int n`; `v: [f32; 4]` (or a `#[repr(C)]` newtype) for `float4 v`;
///   a `#[repr(C)]` struct for an OpenCL struct (see below).
/// - a buffer: `#[input(p)] x: &[T]`, `#[output(p)] y: &mut [T]` or `#[inout(p)] y: &mut [T]`
///   for a `__global T*` (`__constant` for inputs), where the partition pattern `p` is `a:b`
///   (`a` elements for every `b` work-items: `1:1`, `1:255`, `4:1`) or `whole` (every device
///   reads all of it; inputs only). Packages are split and merged by this pattern. A side of
///   `a:b` may name a `const` in scope or an integer scalar parameter (`#[input(cols:1)]` with
///   `cols: i32`): it is checked at each call, by the rules literal sides are checked by now.
/// - a stencil's input: `#[input(1:1, halo = r)] x: &[T]`, read `r` elements (1-D), rows (2-D)
///   or planes (3-D) past each side of a package (`Pattern::halo(r)`), on session buffers and
///   in the one-shot form alike.
/// - an output every device writes in full, reduced element-wise across devices:
///   `#[output(whole, merge = "sum")] bins: &mut [u32]` (or `#[inout(..)]`); the merges are
///   `sum`, `max`, `min` (integers, `f32`, `f64`) and `or`, `and` (integers only).
/// - a `__local` buffer (not a `run` argument): `#[local(per_item = k)] s: [T]`, k elements per
///   work-item of the group (the usual case), or `#[local] s: [T; N]`, N per work-group. N must
///   be at least the work-group size, since kernels index by the local id; write
///   `#[local(allow_smaller)]` for a kernel that really uses fewer.
/// - a parameter may carry a doc comment and lint attributes (`#[allow(..)]`, kept on the
///   generated functions), not `#[cfg]`: the kernel takes every parameter in every build.
///   Primitives may be spelled through their module (`std::primitive::f32`) or a type alias
///   (`type Real = f32;`), which the expansion asserts is the primitive the kernel needs.
/// - user types (OpenCL structs, vector newtypes) must be `hetdsl::Pod`: derive it with
///   `#[derive(hetdsl::Pod)]`, which proves them plain data with no padding.
///
/// # What is checked at compile time
/// The kernel exists; the argument count; each value's width and signedness (`uint` is `u32`);
/// vector widths (`float3` takes the room of `[f32; 4]`); address spaces against roles;
/// `const` data against outputs; patterns against the work-group size; `local`'s dimensions
/// against those the kernel's work-item built-ins read (`get_global_id(1)` needs a 2-D `local`)
/// and against its `reqd_work_group_size`; the balancer's name
/// and options; duplicate and missing options. OpenCL structs are matched field by field:
/// the macro emits `const` assertions that the Rust type's size, alignment, field offsets and
/// field sizes equal the OpenCL layout, and that the type is `hetdsl::Pod` (so every byte a
/// kernel writes lands in a field whose every bit pattern is valid). `__local` sizes are checked
/// against the work-group size and merges against the element type. Every problem is reported
/// in one compile, on the Rust token at fault. Types come from the flattened source, with
/// `typedef`s and object-like `#define`s resolved.
#[proc_macro]
pub fn kernel(input: TokenStream) -> TokenStream {
    expand::kernel(input.into()).into()
}

/// Turns a function signature into a function that co-executes an OpenCL kernel, checked against
/// the kernel at compile time: the one-line form of [`kernel!`], with the same options and
/// parameter syntax.
///
/// ```ignore
/// #[hetdsl::coexec(file = "kernels/saxpy.cl", local = 64)]
/// pub fn saxpy(a: f32, #[input(1:1)] x: &[f32], #[inout(1:1)] y: &mut [f32], n: i32);
///
/// let rt = hetdsl::Runtime::new()?;
/// let report = saxpy(&rt, n, 2.0, &x, &mut y, n as i32)?;        // runtime, global size, arguments
/// let report = saxpy::launch(&rt, n, 2.0, &x, &mut y, n as i32)? // a module of the same name
///     .balancer(Box::new(hetdsl::balance::Dynamic::packages(8)))
///     .run()?;
/// ```
///
/// The program is built at the first call for the runtime's device selection and kept for the
/// rest of the process. The module's `with_source(&rt, &source)` builds a version read at run
/// time, checked against the declaration as `kernel!`'s is, and `launch_on(&program, …)` runs
/// it. On session buffers: `saxpy::session(&rt)` and `saxpy::on(&session)?`, a `saxpy::On<'s>`
/// whose `run` and `launch` take the function's arguments after the runtime, buffers as
/// `hetdsl::Buffer`s (see [`kernel!`]). Declare the function at module level: the companion module reaches
/// the types of the signature through `use super::*`.
#[proc_macro_attribute]
pub fn coexec(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::coexec(args.into(), item.into()).into()
}

/// Implements `hetdsl::Pod` for a struct after proving it plain data: `#[repr(C)]` (or
/// `#[repr(transparent)]`), every field's type `Pod` (an error names the field), and no padding
/// (the fields' sizes add up to the struct's, so cover any gap with an explicit field such as
/// `_pad: [u8; 4]`). `bool`, `char`, references, raw pointers, `NonZero*` and enums are not
/// plain data: a kernel could write a bit pattern that is no valid value of them.
///
/// ```ignore
/// #[repr(C, align(16))]
/// #[derive(Clone, Copy, hetdsl::Pod)]
/// pub struct Sphere { pub center: [f32; 4], pub radius: f32, pub material: i32, pub _pad: [u32; 2] }
/// ```
#[proc_macro_derive(Pod)]
pub fn derive_pod(input: TokenStream) -> TokenStream {
    pod::derive(input.into()).into()
}
