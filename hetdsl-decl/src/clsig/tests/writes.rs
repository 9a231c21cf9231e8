//! Which buffers the reader finds a kernel writes, and through what.

use super::*;

/// The line of the first write the reader finds through each parameter of `kernel`.
fn written(src: &str, kernel: &str) -> Vec<Option<usize>> {
    params(src, kernel).iter().map(|p| p.written_at.as_ref().map(|w| w.line())).collect()
}

/// A function-like macro writes what the compiler's expansion writes: the buffer passed to it,
/// or one it names itself; one that only reads leaves the buffer unwritten.
#[test]
fn writes_through_function_like_macros_are_seen() {
    let src = "#define STORE(p, i, v) p[i] = v\n\
               #define BUMP(i) hits[i]++\n\
               #define LOAD(p, i) (p)[i]\n\
               __kernel void k(__global float* x, __global float* y, __global int* hits) {\n\
                 int i = get_global_id(0);\n\
                 STORE(y, i, LOAD(x, i));\n\
                 BUMP(i);\n\
               }\n";
    assert_eq!(written(src, "k"), [None, Some(5), Some(6)]);
    // Pasted and variadic forms expand as well.
    let src = "#define AT(p) p ## _at\n#define SET(p, ...) vstore4(__VA_ARGS__, p)\n\
               __kernel void k(__global float* y_at, __global float* z) { AT(y)[0] = 1; \
               SET(z, v, 0); }";
    assert_eq!(written(src, "k"), [Some(2), Some(2)]);
}

/// A write inside a function the kernel passes its pointer to is the kernel's write, however
/// the pointer gets there (offset, copy, another function, a function defined after the
/// kernel); a function that only reads it leaves it unwritten.
#[test]
fn writes_in_helper_functions_are_followed() {
    let src = "void put(__global float* p, int i, float v);\n\
               float get(__global const float* p, int i) { return p[i]; }\n\
               void twice(__global float* p, int i, float v) { put(p, i, v); put(p + 1, i, v); }\n\
               __kernel void k(__global float* x, __global float* y, __global float* z, int n) {\n\
                 twice(y + n, 0, get(x, 0));\n\
                 __global float* w = z;\n\
                 put(&w[n], 1, 2.0f);\n\
               }\n\
               void put(__global float* p, int i, float v) {\n\
                 p[i] = v;\n\
               }\n";
    assert_eq!(written(src, "k"), [None, Some(9), Some(9), None]);
    // Recursion ends the walk; a kernel called from a kernel is followed like a function.
    let src = "void a(__global int* p, int d) { if (d) a(p, d - 1); }\n\
               void b(__global int* p, int d) { if (d) b(p, d - 1); else p[0] = 1; }\n\
               __kernel void inner(__global int* q) { atomic_inc(q); }\n\
               __kernel void k(__global int* x, __global int* y, __global int* z) {\n\
                 a(x, 3); b(y, 3); inner(z);\n\
               }\n";
    assert_eq!(written(src, "k"), [None, Some(1), Some(2)]);
}

/// A local copy of the pointer writes the buffer; one that is only read through does not.
#[test]
fn writes_through_a_copy_of_the_pointer_are_seen() {
    let src = "__kernel void k(__global float* x, __global float* y, __global float4* z) {\n\
                 __global float* r = x + 1;\n\
                 __global float* q = y + 4, *s;\n\
                 s = q;\n\
                 q[0] = r[0];\n\
                 __global float* t = (__global float*)z;\n\
                 *(t + 2) += 1.0f;\n\
               }\n";
    assert_eq!(written(src, "k"), [None, Some(4), Some(6)]);
}

/// `const` behind a typedef is the data's `const`, as it is written out, and follows typedefs
/// of typedefs until a plain one takes the name again.
#[test]
fn a_const_typedef_makes_the_pointee_const() {
    let src = "typedef const float cfloat;\ntypedef cfloat cf2;\ntypedef float plain;\n\
               __kernel void k(__global cfloat* a, __global cf2* b, __global plain* c) {}\n\
               typedef float cfloat;\n__kernel void k2(__global cfloat* a) {}";
    let konst = |kernel| -> Vec<bool> {
        params(src, kernel).iter().map(|p| p.pointer.unwrap().const_pointee).collect()
    };
    assert_eq!(konst("k"), [true, true, false]);
    assert_eq!(konst("k2"), [false]);
}

/// A parameter whose type is a typedef of a pointer is that pointer: its address space and
/// `const` are those written in the typedef (a `const` beside the parameter's name is the
/// pointer's own), typedefs of it are too, and a write through it is seen.
#[test]
fn a_pointer_typedef_is_a_pointer_parameter() {
    let src = "typedef __global float* gfp;\ntypedef __global const float* cgfp;\n\
               typedef gfp gfp2;\ntypedef __local int* lip;\n\
               __kernel void k(cgfp a, const gfp b, gfp2 c, lip d, __global gfp* e) {\n\
               c[0] = a[0] + b[0];\n}";
    let ps = params(src, "k");
    let ptrs: Vec<_> = ps.iter().map(|p| p.pointer.map(|q| (q.space, q.const_pointee))).collect();
    let g = Some((AddrSpace::Global, false));
    assert_eq!(ptrs, [Some((AddrSpace::Global, true)), g, g, Some((AddrSpace::Local, false)), g]);
    assert!(ps[..4].iter().all(|p| p.ty == Ty::Scalar(Scalar::Float) || p.name == "d"));
    assert_eq!(ps[3].ty, Ty::Scalar(Scalar::Int));
    assert!(ps[..4].iter().all(|p| p.unsupported.is_none()), "{ps:?}");
    assert!(ps[4].unsupported.as_deref().unwrap().contains("pointer to a pointer"));
    assert_eq!(writes_of(src, "k")[..4], ["-", "-", "w5", "-"]);
    assert_eq!(ps[2].text, "gfp2");
}

/// A parameter declared as an array is a pointer to its element, as C reads it (`x[]`, and
/// `y[N]`, whose size the compiler ignores): its address space and `const` are those written
/// with it, a write through it is seen, also in a helper that takes an array, and an array of
/// pointers or of arrays points to what C says.
#[test]
fn an_array_parameter_is_a_pointer() {
    let src = "#define N 4\n\
               void put(__global float p[], int i) { p[i] = 1.0f; }\n\
               __kernel void k(__global const float x[], __global float y[N], __constant int c[],\n\
               __local float s[16], global float z[], __global float m[][3], __global float* pp[],\n\
               float w[2]) {\n\
               y[0] = x[0] + c[0] + m[0][1]; s[0] = 0; put(z, 1);\n}";
    let ps = params(src, "k");
    let ptrs: Vec<_> = ps.iter().map(|p| p.pointer.map(|q| (q.space, q.const_pointee))).collect();
    let g = Some((AddrSpace::Global, false));
    let want = [
        Some((AddrSpace::Global, true)),
        g,
        Some((AddrSpace::Constant, false)),
        Some((AddrSpace::Local, false)),
        g,
        g,
        g,
        Some((AddrSpace::Private, false)),
    ];
    assert_eq!(ptrs, want);
    let float = Ty::Scalar(Scalar::Float);
    assert_eq!(ps[0].ty, float);
    assert_eq!(ps[2].ty, Ty::Scalar(Scalar::Int));
    assert_eq!(ps[5].ty, Ty::Array(Box::new(float), 3));
    assert!(ps[..6].iter().all(|p| p.unsupported.is_none()), "{ps:?}");
    assert!(ps[6].unsupported.as_deref().unwrap().contains("pointer to a pointer"));
    assert_eq!(writes_of(src, "k")[..5], ["-", "w5", "-", "w5", "w1"]);
    assert_eq!(ps[0].text, "__global const float[]");
    assert_eq!(ps[1].text, "__global float[4]");
}

/// What the reader takes each pointer parameter of `kernel` to be: written at a line
/// (`"w7"`), possibly written where it could not follow the pointer (`"maybe 7: why"`), or
/// read only (`"-"`).
fn writes_of(src: &str, kernel: &str) -> Vec<String> {
    let show = |w: &Option<Written>| match w {
        None => "-".to_string(),
        Some(Written::At(line)) => format!("w{line}"),
        Some(Written::Maybe { line, why }) => format!("maybe {line}: {why}"),
    };
    params(src, kernel)
        .iter()
        .filter(|p| p.pointer.is_some())
        .map(|p| show(&p.written_at))
        .collect()
}

/// A pointer kept in a struct (by its initializer, a designated one, or an assignment to a
/// member) or in an array of pointers writes the buffer when something is written through it
/// there, also in a function the struct is passed to; kept there and only read, it does not,
/// nor does one kept in another member of the same struct. (An array's elements are one
/// holder: a write through any of them counts for every pointer put in the array.)
#[test]
fn writes_through_pointers_held_in_structs_and_arrays_are_seen() {
    let src = "struct View { __global float* p; int n; };\n\
               typedef struct { __global float* lo; __global float* hi; } Pair;\n\
               void fill(struct View v, int i) { v.p[i] = 0.0f; }\n\
               __kernel void k(__global float* a, __global float* b, __global float* c,\n\
                               __global float* d, __global float* e, __global float* f, int off) {\n\
                 int i = get_global_id(0);\n\
                 struct View v = { a, 4 };\n\
                 v.p[i] = 1.0f;\n\
                 struct View w; w.p = b + off;\n\
                 *(w.p + i) = 2.0f;\n\
                 Pair pr = { .lo = e, .hi = c };\n\
                 pr.hi[i] += pr.lo[i];\n\
                 __global float* ptrs[2] = { d, d + off };\n\
                 ptrs[0][i] = ptrs[1][i];\n\
                 struct View u = { f };\n\
                 fill(u, i);\n\
               }\n\
               __kernel void r(__global float* a, __global float* b, __global float* y) {\n\
                 struct View v = { a, 1 };\n\
                 __global float* ptrs[1]; ptrs[0] = b;\n\
                 y[0] = v.p[0] + ptrs[0][1] + *v.p;\n\
               }\n";
    assert_eq!(writes_of(src, "k"), ["w7", "w9", "w11", "w13", "-", "w2"]);
    assert_eq!(writes_of(src, "r"), ["-", "-", "w20"]);
}

/// A function returning a pointer into its parameter (or a struct holding one, or one of two
/// parameters) gives the caller that pointer: a write through the returned value is a write
/// through the argument.
#[test]
fn writes_through_pointers_returned_by_functions_are_seen() {
    let src = "struct View { __global float* p; };\n\
               __global float* at(__global float* b, int o) { return b + o; }\n\
               __global float* pick(__global float* b, __global float* c, int s) {\n\
                 return s ? at(b, 1) : c;\n\
               }\n\
               struct View wrap(__global float* b) { struct View v = { b }; return v; }\n\
               __kernel void k(__global float* a, __global float* b, __global float* c,\n\
                               __global float* d, __global float* e, __global float* f) {\n\
                 int i = get_global_id(0);\n\
                 *at(a, i) = 1.0f;\n\
                 at(b, i)[0] += 2.0f;\n\
                 pick(c, d, i)[0] = 3.0f;\n\
                 wrap(e).p[i] = at(f, i)[0] + *at(f, 2);\n\
               }\n";
    assert_eq!(writes_of(src, "k"), ["w9", "w10", "w11", "w11", "w12", "-"]);
}

/// The expressions a pointer travels through before it is written: a conditional, a cast, an
/// address-space conversion, a dereference after a condition's parenthesis, a pre-increment;
/// and the built-ins that store through a pointer argument other than the first or last.
#[test]
fn writes_through_conditionals_casts_and_pointer_built_ins_are_seen() {
    let src = "__kernel void k(__global float* a, __global float* b, __global float* c,\n\
                               __global float* d, __global float* e, __global int* f,\n\
                               __global float* g, __global int* h, __global float* t) {\n\
                 int i = get_global_id(0);\n\
                 (i > 3 ? a : t)[i] = 1.0f;\n\
                 ((__global int*)b)[i] = 1;\n\
                 if (i) *c = 0.0f;\n\
                 float s = sincos(t[i], &d[i]);\n\
                 *++e = 2.0f;\n\
                 atomic_compare_exchange_strong(h, &f[i], 1);\n\
                 to_global(g)[i] = 1.0f;\n\
               }\n";
    assert_eq!(writes_of(src, "k"), ["w4", "w5", "w6", "w7", "w8", "w9", "w10", "w9", "w4"]);
}

/// Reads stay reads: a pointer compared, tested, used in an index or read through a cast or a
/// conditional, and a buffer read for an index of an atomic's target.
#[test]
fn reads_around_pointers_are_not_writes() {
    let src = "__kernel void k(__global float* a, __global float* b, __global uint* v,\n\
                               __global uint* bins, __global float* y) {\n\
                 int i = get_global_id(0);\n\
                 if (a == b || !a) return;\n\
                 float x = (i > 3 ? a : b)[i] + ((__global float*)a)[1] + *(b + 1);\n\
                 atomic_inc(&bins[v[i] % 4]);\n\
                 y[i] = x + (a < b ? 1.0f : 0.0f);\n\
               }\n";
    assert_eq!(writes_of(src, "k"), ["-", "-", "-", "w5", "w6"]);
}

/// Where the pointer goes somewhere the reader cannot follow, it counts as written, and says
/// where and why.
#[test]
fn pointers_the_reader_cannot_follow_count_as_written() {
    let src = "struct View { __global float* p; };\n\
               void keep(struct View* v, __global float* b) { v->p = b; }\n\
               __kernel void k(__global float* a, __global float* b, __global float* c) {\n\
                 struct View v;\n\
                 frobnicate(a, 1);\n\
                 keep(&v, b);\n\
                 v.p[0] = 1.0f;\n\
                 __global float* ptrs[1][1][1][1][1];\n\
                 ptrs[0][0][0][0][0] = c;\n\
               }\n";
    let got = writes_of(src, "k");
    assert!(
        got[0]
            .starts_with("maybe 4: a pointer into it is passed to `frobnicate`, which is neither"),
        "{got:?}"
    );
    assert_eq!(got[1], "maybe 1: a pointer into it is stored through `v->p`, into memory the reader does not follow");
    assert!(
        got[2].starts_with("maybe 8: a pointer into it is stored in `ptrs`, more than 4"),
        "{got:?}"
    );
}
