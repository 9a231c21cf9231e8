//! A minimal PNG writer (8-bit RGBA, uncompressed deflate blocks): enough for the samples to
//! save their images without an image crate.

use std::io::Write;
use std::path::Path;

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in bytes.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// The PNG file bytes of a `width × height` RGBA image, rows top to bottom.
pub fn encode_rgba(width: usize, height: usize, pixels: &[[u8; 4]]) -> Vec<u8> {
    assert_eq!(pixels.len(), width * height, "pixel count must be width × height");
    // Scanlines, each prefixed by filter type 0 (none).
    let mut raw = Vec::with_capacity(height * (1 + 4 * width));
    for row in pixels.chunks(width.max(1)) {
        raw.push(0);
        for p in row {
            raw.extend_from_slice(p);
        }
    }
    // zlib stream of stored (uncompressed) deflate blocks of at most 65535 bytes.
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65535).collect();
    for (k, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(k + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    zlib.extend_from_slice(&adler32(&raw).to_be_bytes());

    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(&(width as u32).to_be_bytes());
    header.extend_from_slice(&(height as u32).to_be_bytes());
    header.extend_from_slice(&[8, 6, 0, 0, 0]); // 8 bits, RGBA, deflate, no filter, no interlace
    chunk(&mut out, b"IHDR", &header);
    chunk(&mut out, b"IDAT", &zlib);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Write an RGBA image as a PNG file.
pub fn write_rgba(
    path: &Path,
    width: usize,
    height: usize,
    pixels: &[[u8; 4]],
) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(&encode_rgba(width, height, pixels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_known_values() {
        // Standard check values of CRC-32 and Adler-32 for "123456789" / "Wikipedia".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    }

    #[test]
    fn png_has_signature_header_and_all_pixels() {
        let png = encode_rgba(3, 2, &[[1, 2, 3, 4]; 6]);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 3);
        // 2 rows × (1 filter byte + 12) raw bytes stored verbatim + zlib/deflate framing.
        let idat_len = u32::from_be_bytes(png[33..37].try_into().unwrap()) as usize;
        assert_eq!(idat_len, 2 + 5 + 26 + 4);
    }
}
