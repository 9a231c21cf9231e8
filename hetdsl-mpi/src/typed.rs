//! Rank 0's arguments against the kernel's parameters, by type. A node runs each range over
//! raw bytes (windows of its staging or of the caller's memory), which hetdsl takes without a
//! Rust type: nothing compared an `f32` buffer with a `uint*` parameter, every rank ran the
//! kernel on the bits, and rank 0 returned `Ok` with numbers of nothing, where a single-node
//! launch refuses the argument. So rank 0 also builds each argument as the caller typed it
//! (of no elements) into a launch of no NDRange: hetdsl checks a launch's arguments against
//! the kernel before anything else, and that launch then stops at its geometry, having set up
//! nothing.

use hetdsl::{Error, Launch, Pattern, Pod, Program, Result};

/// Adds one argument, typed as the caller gave it, of no elements, to a launch.
pub(crate) type Typed = Box<dyn for<'x> Fn(Launch<'x>) -> Launch<'x>>;

pub(crate) fn input<T: Pod>(pattern: Pattern) -> Typed {
    Box::new(move |l| l.input::<T>(&[], pattern))
}

pub(crate) fn output<T: Pod>(pattern: Pattern) -> Typed {
    Box::new(move |l| l.output::<T>(&mut [], pattern))
}

pub(crate) fn inout<T: Pod>(pattern: Pattern) -> Typed {
    Box::new(move |l| l.inout::<T>(&mut [], pattern))
}

pub(crate) fn scalar<T: Pod>(value: T) -> Typed {
    Box::new(move |l| l.scalar(value))
}

pub(crate) fn local<T: Pod>(count: usize, per_item: bool) -> Typed {
    match per_item {
        false => Box::new(move |l| l.local_buffer::<T>(count)),
        true => Box::new(move |l| l.local_buffer_per_item::<T>(count)),
    }
}

/// The argument error a single-node launch of `kernel` with `args` gives, if any.
pub(crate) fn check(program: &Program, kernel: &str, args: &[Typed]) -> Result<()> {
    let launch = args.iter().fold(program.launch(kernel), |l, add| add(l));
    match launch.run() {
        Err(e @ (Error::BadArgument { .. } | Error::BadDeclaredArgument { .. })) => Err(e),
        Err(e @ Error::NoSuchKernel { .. }) => Err(e),
        // The NDRange refused (or anything else): the arguments passed their check.
        _ => Ok(()),
    }
}
