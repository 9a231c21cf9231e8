//! PNG files through the `png` crate: the samples' output images (RGBA) and the PNG plots (RGB).

use std::io::BufWriter;
use std::path::Path;

/// The PNG bytes of a `width × height` image of `channels` bytes per pixel (3: RGB, 4: RGBA),
/// rows top to bottom. A pixel count that does not match the size is an error, not a panic.
pub fn encode(
    width: usize,
    height: usize,
    channels: usize,
    bytes: &[u8],
) -> Result<Vec<u8>, String> {
    let colour = match channels {
        3 => png::ColorType::Rgb,
        4 => png::ColorType::Rgba,
        _ => return Err(format!("{channels} channels: only RGB (3) and RGBA (4) are written")),
    };
    if bytes.len() != width * height * channels {
        return Err(format!(
            "{} bytes for a {width}x{height} image of {channels} channels (expected {})",
            bytes.len(),
            width * height * channels
        ));
    }
    let (w, h) = (u32::try_from(width), u32::try_from(height));
    let (Ok(w), Ok(h)) = (w, h) else { return Err(format!("{width}x{height}: too large for PNG")) };
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(colour);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(bytes).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The PNG file bytes of a `width × height` RGBA image, rows top to bottom.
pub fn encode_rgba(width: usize, height: usize, pixels: &[[u8; 4]]) -> Result<Vec<u8>, String> {
    encode(width, height, 4, pixels.as_flattened())
}

/// Write an RGBA image as a PNG file.
pub fn write_rgba(
    path: &Path,
    width: usize,
    height: usize,
    pixels: &[[u8; 4]],
) -> Result<(), String> {
    let bytes = encode_rgba(width, height, pixels)?;
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    std::io::Write::write_all(&mut BufWriter::new(file), &bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoding with the crate's decoder gives back every pixel: the reference is the input.
    #[test]
    fn round_trip_gives_back_every_pixel() {
        let pixels: Vec<[u8; 4]> = (0..6u8).map(|i| [i, 2 * i, 255 - i, 100 + i]).collect();
        let bytes = encode_rgba(3, 2, &pixels).unwrap_or_default();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let mut reader =
            png::Decoder::new(std::io::Cursor::new(bytes)).read_info().expect("decodes");
        let mut buf = vec![0; reader.output_buffer_size().unwrap_or(0)];
        let info = reader.next_frame(&mut buf).expect("one frame");
        assert_eq!((info.width, info.height, info.color_type), (3, 2, png::ColorType::Rgba));
        assert_eq!(&buf[..info.buffer_size()], pixels.as_flattened());
    }

    #[test]
    fn a_wrong_pixel_count_is_an_error() {
        assert!(encode_rgba(3, 2, &[[0; 4]; 5]).is_err());
        assert!(encode(1, 1, 2, &[0, 0]).is_err());
    }
}
