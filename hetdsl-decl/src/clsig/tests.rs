use super::*;

fn params(src: &str, kernel: &str) -> Vec<Param> {
    let source = parse(src).unwrap();
    source.kernel(kernel).unwrap().params.clone().unwrap()
}

#[test]
fn reads_a_plain_signature() {
    let p = params(
        "__kernel void saxpy(float a, __global const float* x, __global float *y, int n) { y[0] = a; }",
        "saxpy",
    );
    let names: Vec<_> = p.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "x", "y", "n"]);
    assert_eq!(p[0].ty, Ty::Scalar(Scalar::Float));
    assert_eq!(p[0].pointer, None);
    assert_eq!(p[1].pointer, Some(Pointer { space: AddrSpace::Global, const_pointee: true }));
    assert_eq!(p[2].pointer, Some(Pointer { space: AddrSpace::Global, const_pointee: false }));
    assert_eq!(p[3].ty, Ty::Scalar(Scalar::Int));
    assert_eq!(p[1].text, "__global const float*");
}

#[test]
fn qualifier_order_spellings_and_attributes() {
    let src = "kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k(\n\
               const __global float4 *restrict a,\n\
               global uchar16* b,\n\
               __constant unsigned int *c,\n\
               __local double *d,\n\
               unsigned long e, short int f, signed char g, unsigned h) {}";
    let p = params(src, "k");
    assert_eq!(p[0].ty, Ty::Vector(Scalar::Float, 4));
    assert!(p[0].pointer.unwrap().const_pointee);
    assert_eq!(p[1].ty, Ty::Vector(Scalar::UChar, 16));
    assert_eq!(p[2].pointer.unwrap().space, AddrSpace::Constant);
    assert_eq!(p[2].ty, Ty::Scalar(Scalar::UInt));
    assert_eq!(p[3].pointer.unwrap().space, AddrSpace::Local);
    let scalars: Vec<_> = p[4..].iter().map(|p| p.ty.clone()).collect();
    let expected = [Scalar::ULong, Scalar::Short, Scalar::Char, Scalar::UInt].map(Ty::Scalar);
    assert_eq!(scalars, expected);
    assert_eq!(p[1].line, 2);
}

#[test]
fn typedefs_and_defines_resolve() {
    let src = "#define REAL float\n\
               typedef REAL real2 __attribute__((unused));\n\
               typedef uint count_t;\n\
               typedef float4 vec;\n\
               __kernel void k(__global real2* a, count_t n, __global vec* v, REAL s) {}";
    let p = params(src, "k");
    assert_eq!(p[0].ty, Ty::Scalar(Scalar::Float));
    assert_eq!(p[1].ty, Ty::Scalar(Scalar::UInt));
    assert_eq!(p[2].ty, Ty::Vector(Scalar::Float, 4));
    assert_eq!(p[3].ty, Ty::Scalar(Scalar::Float));
    assert_eq!(p[3].text, "float");
}

#[test]
fn structs_get_c_layouts() {
    let src = "typedef struct { float4 center; float radius; int material; } Sphere;\n\
               struct Ray { float3 o; float3 d; };\n\
               typedef struct Ray Ray;\n\
               typedef struct __attribute__((packed)) { char c; int i; } Packed;\n\
               typedef struct { Sphere s[2]; char tag; } Scene;\n\
               __kernel void trace(__global const Sphere* s, __global Ray* r, Scene sc) {}";
    let source = parse(src).unwrap();
    let sphere = &source.structs[source.struct_named("Sphere").unwrap()];
    assert_eq!(sphere.layout, Some(Layout { size: 32, align: 16 }));
    let offsets: Vec<_> =
        sphere.fields.iter().map(|f| (f.name.as_str(), f.offset.unwrap())).collect();
    assert_eq!(offsets, [("center", 0), ("radius", 16), ("material", 20)]);
    let ray = &source.structs[source.struct_named("Ray").unwrap()];
    assert_eq!(ray.layout, Some(Layout { size: 32, align: 16 }));
    let packed = &source.structs[source.struct_named("Packed").unwrap()];
    assert_eq!(packed.layout, Some(Layout { size: 5, align: 1 }));
    let scene = &source.structs[source.struct_named("Scene").unwrap()];
    assert_eq!(scene.layout, Some(Layout { size: 80, align: 16 }));
    let p = source.kernel("trace").unwrap().params.as_ref().unwrap();
    assert!(matches!(p[0].ty, Ty::Struct(_)));
    assert_eq!(p[2].ty.display(&source.structs).to_string(), "Scene");
}

#[test]
fn bodies_and_helpers_are_skipped() {
    let src = "float helper(float x) { return x; }\n\
               /* __kernel void commented(int x) */\n\
               __kernel void a(int n) { if (n) { struct S { int q; } s; } }\n\
               __kernel void b(void) {}\n\
               void kernel_like(void);";
    let source = parse(src).unwrap();
    let names: Vec<_> = source.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(source.kernel("b").unwrap().params, Ok(vec![]));
    assert_eq!(source.kernel("a").unwrap().line, 2);
}

#[test]
fn unknown_types_and_unsupported_parameters_are_reported_not_guessed() {
    let src = "__kernel void k(__global Mystery* m, read_only image2d_t img, __global float** pp, __local int* l) {}";
    let p = params(src, "k");
    assert_eq!(p[0].ty, Ty::Opaque("Mystery".into()));
    assert!(p[1].unsupported.is_some());
    assert!(p[2].unsupported.is_some());
    assert_eq!(p[3].unsupported, None);
}

#[test]
fn a_broken_signature_is_an_error_of_that_kernel_only() {
    let src = "__kernel void bad(__global float* x, ) {}\n__kernel void good(int n) {}";
    let source = parse(src).unwrap();
    let err = source.kernel("bad").unwrap().params.clone().unwrap_err();
    assert_eq!(err.line, 0);
    assert!(source.kernel("good").unwrap().params.is_ok());
}

#[test]
fn prototypes_defer_to_definitions() {
    let src = "__kernel void k(int);\n__kernel void k(int n) {}";
    let source = parse(src).unwrap();
    assert_eq!(source.kernel("k").unwrap().params.as_ref().unwrap()[0].name, "n");
}

#[test]
fn malformed_input_gives_errors() {
    for src in ["__kernel void k(int n) {", "typedef struct { int a; ", "\"open", "a /* b"] {
        assert!(parse(src).is_err(), "{src}");
    }
}

/// The fuzz target's corpus (hetdsl-decl/fuzz/corpus/clsig), replayed on stable: every input
/// reads without a panic and what it gives is self-consistent.
#[test]
fn fuzz_corpus_reads_consistently() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/clsig");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        if let Ok(source) = parse(text) {
            assert_eq!(source.self_check(text), Ok(()), "{}", path.display());
        }
        count += 1;
    }
    assert!(count >= 10, "only {count} corpus inputs in {}", dir.display());
}

/// Found by the fuzzer: `__attribute__` followed by a closing bracket made the group skipper
/// slice backwards.
#[test]
fn attribute_before_a_stray_closer_is_skipped() {
    for src in ["__kernel __attribute__ ) void f(int x) {}", "struct __attribute__ ] S { int a; };"]
    {
        let _ = parse(src);
    }
    let source = parse("__kernel __attribute__ ) void f(int x) {}").unwrap();
    assert_eq!(source.kernel("f").unwrap().params.as_ref().unwrap()[0].name, "x");
}
