//! `#[derive(Pod)]`: proves that a struct is plain data, so that a kernel may write any bytes
//! over it. Every field's type must be `Pod` (a bound per field, spanned on the field's type), the
//! struct must be `#[repr(C)]` or `#[repr(transparent)]`, and it must have no padding: its size
//! is the sum of its fields' sizes, so every byte belongs to a field whose every bit pattern is
//! valid (padding bytes are uninitialised, and reading them to send them to a device is undefined
//! behaviour).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput};

use crate::errors::Errors;

pub fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.into_compile_error(),
    };
    match expand(&input) {
        Ok(tokens) => tokens,
        Err(e) => e.into_compile_error(),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let name = &input.ident;
    let fields = match &input.data {
        Data::Struct(s) => Some(&s.fields),
        Data::Enum(e) => {
            errors.push(syn::Error::new(
                e.enum_token.span,
                "`Pod` is for structs: an enum has bit patterns that are no valid value (its \
                 discriminant), so a kernel could write an invalid one; pass an integer instead",
            ));
            None
        }
        Data::Union(u) => {
            errors.push(syn::Error::new(
                u.union_token.span,
                "`Pod` is for structs: implement it by hand for a union whose every field is plain \
                 data and as large as the union",
            ));
            None
        }
    };
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &input.generics,
            "`#[derive(Pod)]` takes no generics: the layout is checked for one concrete type",
        ));
    }
    if fields.is_some() && !has_stable_repr(&input.attrs) {
        errors.push(syn::Error::new(
            name.span(),
            format!(
                "`{name}` needs `#[repr(C)]` (or `#[repr(transparent)]`): without it Rust may \
                 reorder the fields, and the layout a kernel sees would not be the declared one"
            ),
        ));
    }
    errors.finish()?;
    let Some(fields) = fields else { unreachable!("an enum or a union was refused above") };
    // One `Pod` bound per field, spanned on its type (an error names the field at fault), which
    // also gathers what the field is made of.
    let mut lanes = Vec::new();
    let mut sizes = Vec::new();
    for field in fields {
        let ty = &field.ty;
        lanes.push(quote_spanned! {ty.span()=> ::hetdsl::__private::pod_lanes::<#ty>() });
        sizes.push(quote!(::core::mem::size_of::<#ty>()));
    }
    let padding_msg = format!(
        "`{name}` has padding (its size is more than the sum of its fields' sizes): a kernel may \
         write those bytes and a device reads them uninitialised; cover each gap with an explicit \
         field such as `_pad: [u8; N]` (or `[u32; N]`), or reorder the fields"
    );
    let name_str = name.to_string();
    Ok(quote_spanned! {name.span()=>
        // No padding: the fields cover every byte.
        const _: () = ::core::assert!(
            ::core::mem::size_of::<#name>() == 0 #(+ #sizes)*,
            #padding_msg
        );
        // SAFETY: the struct has a stable layout (`repr(C)`/`repr(transparent)`, checked above),
        // every field is `Pod` (bounds above) and the fields cover every byte (size assertion
        // above), so every bit pattern of its bytes is a valid value.
        unsafe impl ::hetdsl::Pod for #name {
            // Every field is plain data, and these are the primitives they hold: the run-time
            // check of a plain launch compares them with a vector's scalar, as `kernel!` does.
            const HOST_TYPE: ::hetdsl::__private::HostType = ::hetdsl::__private::HostType::Opaque {
                size: ::core::mem::size_of::<#name>(),
                name: #name_str,
                lanes: ::hetdsl::__private::Lanes::all(&[#(#lanes),*]),
            };
            // From the fields again, not through `Self`'s own constants: naming them would
            // repeat the user's errors about `Self` (a field that is not `Send`, …).
            const LANES: ::hetdsl::__private::Lanes =
                ::hetdsl::__private::Lanes::all(&[#(#lanes),*]);
        }
    })
}

/// `#[repr(C)]` or `#[repr(transparent)]` among the attributes (with `align`, `packed`, … beside).
fn has_stable_repr(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("repr")).any(|a| {
        let mut stable = false;
        let _ = a.parse_nested_meta(|m| {
            if m.path.is_ident("C") || m.path.is_ident("transparent") {
                stable = true;
            }
            // Skip `align(16)`, `packed(2)`: their arguments are not ours to read.
            if m.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in m.input);
                let _: TokenStream = content.parse()?;
            }
            Ok(())
        });
        stable
    })
}
