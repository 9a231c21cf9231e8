//! Collects every problem of a declaration so that one compile shows them all (as serde_derive's
//! `Ctxt` does), each on its own span.

#[derive(Default)]
pub struct Errors {
    first: Option<syn::Error>,
}

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.first {
            Some(first) => first.combine(e),
            None => self.first = Some(e),
        }
    }

    pub fn extend(&mut self, errors: impl IntoIterator<Item = syn::Error>) {
        for e in errors {
            self.push(e);
        }
    }

    /// `Err` with every error pushed, if any.
    pub fn finish(self) -> syn::Result<()> {
        match self.first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
