//! The layout assertions a declaration expands to: what only the compiler can compare (the
//! size, alignment and field offsets of a user's type against the OpenCL struct or vector it
//! stands for, and that a primitive's name was not shadowed) becomes `const` items that fail
//! the build, each with a message spanned on the Rust type.

use proc_macro2::Span;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Type;

use super::Ctx;
use crate::clsig;
use hetdsl_decl::declcheck::{self, Fit};

impl Ctx<'_> {
    /// `rust` must be the primitive `want` (`u32`, `f32`, …). Its name may be shadowed in the
    /// user's scope (`type u32 = char;`, a struct named `f32`), and another name may be a type
    /// alias (`type Real = f32;`), which the macro cannot see through: assert that it is.
    pub(super) fn assert_primitive(&mut self, rust: &Type, want: &str) {
        if !self.asserted.insert(format!("{} as {want}", rust.to_token_stream())) {
            return;
        }
        let primitive = syn::Ident::new(want, rust.span());
        let named = super::path_ident(rust).is_some_and(|n| declcheck::is_primitive(&n));
        let assert = if named { quote!(assert_primitive) } else { quote!(assert_same) };
        self.asserts.extend(quote_spanned! {rust.span()=>
            const _: fn() = ::hetdsl::__private::#assert::<#rust, ::core::primitive::#primitive>;
        });
    }

    pub(super) fn assert_newtype(&mut self, rust: &Type, fit: &Fit) {
        let Fit::Newtype { size, desc, elem, three_lanes } = fit else { return };
        // Keyed by the OpenCL type too: one Rust type may stand for two OpenCL ones.
        if !self.asserted.insert(format!("{} as {desc}", rust.to_token_stream())) {
            return;
        }
        let span = rust.span();
        let size = *size as usize;
        let msg = hetdsl_decl::declcheck::newtype_size_message(desc);
        let kind_msg = hetdsl_decl::declcheck::newtype_kind_message(desc, elem);
        let variant = syn::Ident::new(&elem.to_uppercase(), span);
        self.asserts.extend(quote_spanned! {span=>
            const _: () = ::core::assert!(::core::mem::size_of::<#rust>() == #size, #msg);
            // Plain data as a whole (`#[derive(Pod)]` checks every field, not only `.0`, and that
            // the fields cover every byte), made of the vector's scalar: a newtype of `[i32; 4]`
            // has the size of a `float4`, but the kernel would read its integers as floats.
            const _: () = ::core::assert!(
                ::hetdsl::__private::pod_lanes::<#rust>()
                    .hold(::hetdsl::__private::Prim::#variant, #three_lanes),
                #kind_msg
            );
        });
    }

    /// `const` assertions that `rust` has the layout of OpenCL struct `index`, spanned on the
    /// Rust type so that a failure points at the declaration.
    pub(super) fn assert_struct(&mut self, rust: &Type, index: usize, layout: clsig::Layout) {
        // Keyed by the OpenCL struct too: a Rust type given for two different OpenCL structs is
        // checked against both.
        if !self.asserted.insert(format!("{} as struct {index}", rust.to_token_stream())) {
            return;
        }
        let span = rust.span();
        let def = &self.cl.structs[index];
        let at = self.source.at(def.line);
        let name = &def.name;
        let (size, align) = (layout.size as usize, layout.align as usize);
        let size_msg = hetdsl_decl::declcheck::struct_size_message(name, layout.size, &at);
        let align_msg = hetdsl_decl::declcheck::struct_align_message(name, layout.align, &at);
        // One `const` per assertion, so that every failing one is reported.
        let mut checks = quote_spanned! {span=>
            const _: () = ::core::assert!(::core::mem::size_of::<#rust>() == #size, #size_msg);
            const _: () = ::core::assert!(::core::mem::align_of::<#rust>() == #align, #align_msg);
        };
        for field in &def.fields {
            let (Some(offset), Some(l)) = (field.offset, field.ty.layout(&self.cl.structs)) else {
                continue;
            };
            let Some(ident) = field_ident(&field.name, span) else {
                let msg = format!(
                    "field `{}` of `{name}` ({}) has a name no Rust field can have; rename it in OpenCL",
                    field.name,
                    self.source.at(field.line)
                );
                checks.extend(quote_spanned! {span=> ::core::compile_error!(#msg); });
                continue;
            };
            let (offset, fsize) = (offset as usize, l.size as usize);
            let fat = self.source.at(field.line);
            let ty = field.ty.display(&self.cl.structs);
            let offset_msg = format!(
                "field `{}` of `{name}` is at byte {offset} in OpenCL ({fat}); the Rust struct must declare the \
                 same fields in the same order, #[repr(C)]",
                field.name
            );
            let size_msg = format!(
                "field `{}` of `{name}` is `{ty}`, {fsize} bytes, in OpenCL ({fat})",
                field.name
            );
            checks.extend(quote_spanned! {span=>
                const _: () = ::core::assert!(::core::mem::offset_of!(#rust, #ident) == #offset, #offset_msg);
                const _: () = ::core::assert!(
                    ::hetdsl::__private::size_of_field::<#rust, _>(|v| &v.#ident) == #fsize,
                    #size_msg
                );
            });
            // Same size, same kind: a `f32` field for an OpenCL `uint` reads the bits wrong.
            if let Some(prim) = field_primitive(&field.ty, span) {
                let three = matches!(field.ty, clsig::Ty::Vector(_, 3));
                let type_msg = format!(
                    "field `{}` of `{name}` is `{ty}` in OpenCL ({fat}): the Rust field must hold the \
                     same primitive (`{}`, or an array of it for a vector)",
                    field.name,
                    prim.0
                );
                let variant = prim.1;
                checks.extend(quote_spanned! {span=>
                    const _: () = ::core::assert!(
                        ::hetdsl::__private::field_lanes::<#rust, _>(|v| &v.#ident)
                            .hold(::hetdsl::__private::Prim::#variant, #three),
                        #type_msg
                    );
                });
            }
        }
        self.asserts.extend(quote_spanned! {span=>
            #checks
            // Plain data as a whole: `#[derive(Pod)]` proves every field `Pod` and no padding, so
            // the bytes the kernel writes, including those in the OpenCL struct's padding, all
            // land in fields whose every bit pattern is valid.
            const _: fn() = ::hetdsl::__private::assert_pod_type::<#rust>;
        });
    }
}

/// A field name as a Rust identifier (`r#type` for keywords); `None` for the names no raw
/// identifier can spell (`self`, `super`, `crate`, `Self`, `_`).
fn field_ident(name: &str, span: Span) -> Option<syn::Ident> {
    if let Ok(mut id) = syn::parse_str::<syn::Ident>(name) {
        id.set_span(span);
        return Some(id);
    }
    let raw = format!("r#{name}");
    syn::parse_str::<syn::Ident>(&raw).ok().map(|_| syn::Ident::new_raw(name, span))
}

/// The Rust primitive an OpenCL scalar or vector field is made of (`u32` and its `Prim`
/// variant), where it has one.
fn field_primitive(ty: &clsig::Ty, span: Span) -> Option<(&'static str, syn::Ident)> {
    let scalar = match ty {
        clsig::Ty::Scalar(s) | clsig::Ty::Vector(s, _) => *s,
        _ => return None,
    };
    let rust = scalar.rust()?;
    Some((rust, syn::Ident::new(&rust.to_uppercase(), span)))
}
