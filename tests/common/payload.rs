//! Building DUMP payloads by hand, so tests can RESTORE forged filters that pass Redis's own
//! checks (type, version, CRC) and reach the module's loader.
//!
//! A DUMP payload of a module value is: the type byte, the module id, the fields the module saved
//! (each an opcode then its value), an end opcode, then two bytes of RDB version and a CRC-64
//! (Jones polynomial, reflected) of everything before it.

/// The parts of a real DUMP payload that a forged one reuses.
pub struct Envelope {
    /// Type byte and module id.
    head: Vec<u8>,
    /// The RDB version bytes.
    version: [u8; 2],
}

/// One field as a module saves it.
#[derive(Clone, Debug)]
pub enum Field {
    Unsigned(u64),
    Double(f64),
    Buffer(Vec<u8>),
}

impl Envelope {
    /// Takes the head and version from a real payload (DUMP of any filter).
    pub fn from_dump(payload: &[u8]) -> Envelope {
        assert_eq!(payload[0], 7, "a module value (RDB_TYPE_MODULE_2)");
        let head_len = 1 + length_size(payload[1]);
        let version_at = payload.len() - 10;
        Envelope {
            head: payload[..head_len].to_vec(),
            version: [payload[version_at], payload[version_at + 1]],
        }
    }

    /// The same envelope for another encoding version of the module type (the low 10 bits of
    /// the module id), such as RedisBloom's older ones.
    pub fn with_encoding_version(&self, encver: u64) -> Envelope {
        assert_eq!(self.head[1], 0x81, "a 64-bit module id");
        let id = u64::from_be_bytes(self.head[2..10].try_into().unwrap());
        let id = (id & !0x3ff) | (encver & 0x3ff);
        let mut head = self.head.clone();
        head[2..10].copy_from_slice(&id.to_be_bytes());
        Envelope {
            head,
            version: self.version,
        }
    }

    /// A payload holding exactly these fields (and the end opcode).
    pub fn payload(&self, fields: &[Field]) -> Vec<u8> {
        let mut out = self.head.clone();
        for field in fields {
            match field {
                Field::Unsigned(value) => {
                    out.extend(encode_length(2));
                    out.extend(encode_length(*value));
                }
                Field::Double(value) => {
                    out.extend(encode_length(4));
                    out.extend(value.to_le_bytes());
                }
                Field::Buffer(bytes) => {
                    out.extend(encode_length(5));
                    out.extend(encode_length(bytes.len() as u64));
                    out.extend(bytes);
                }
            }
        }
        out.extend(encode_length(0));
        self.seal(out)
    }

    /// The fields a real payload holds, as the module saved them.
    pub fn fields(&self, full: &[u8]) -> Vec<Field> {
        let mut body = &full[self.head.len()..full.len() - 10];
        let mut fields = Vec::new();
        loop {
            let opcode = take_length(&mut body);
            match opcode {
                0 => return fields,
                2 => fields.push(Field::Unsigned(take_length(&mut body))),
                4 => {
                    let (value, rest) = body.split_first_chunk::<8>().unwrap();
                    fields.push(Field::Double(f64::from_le_bytes(*value)));
                    body = rest;
                }
                5 => {
                    let len = take_length(&mut body) as usize;
                    fields.push(Field::Buffer(body[..len].to_vec()));
                    body = &body[len..];
                }
                other => panic!("opcode {other}"),
            }
        }
    }

    /// Bytes of the body (the saved fields and the end opcode) of a full payload.
    pub fn body_len(&self, full: &[u8]) -> usize {
        full.len() - 10 - self.head.len()
    }

    /// A payload cut after `len` bytes of its body (`len` below `body_len`), with a valid CRC.
    pub fn truncated(&self, full: &[u8], len: usize) -> Vec<u8> {
        assert!(len < self.body_len(full));
        self.seal(full[..self.head.len() + len].to_vec())
    }

    /// A real payload with its body changed by `change`, sealed again with a valid CRC.
    pub fn altered(&self, full: &[u8], change: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut body = full[self.head.len()..full.len() - 10].to_vec();
        change(&mut body);
        let mut out = self.head.clone();
        out.extend(body);
        self.seal(out)
    }

    /// Appends version and CRC.
    fn seal(&self, mut body: Vec<u8>) -> Vec<u8> {
        body.extend(self.version);
        let crc = crc64(&body);
        body.extend(crc.to_le_bytes());
        body
    }
}

/// Bytes taken by an RDB length whose first byte is `first`.
fn length_size(first: u8) -> usize {
    match first >> 6 {
        0 => 1,
        1 => 2,
        _ if first == 0x80 => 5,
        _ if first == 0x81 => 9,
        _ => panic!("not a plain length: {first:#x}"),
    }
}

/// Reads an RDB length (the inverse of [`encode_length`]).
fn take_length(input: &mut &[u8]) -> u64 {
    let size = length_size(input[0]);
    let bytes = &input[..size];
    let value = match size {
        1 => u64::from(bytes[0] & 0x3f),
        2 => u64::from(bytes[0] & 0x3f) << 8 | u64::from(bytes[1]),
        5 => u64::from(u32::from_be_bytes(bytes[1..5].try_into().unwrap())),
        _ => u64::from_be_bytes(bytes[1..9].try_into().unwrap()),
    };
    *input = &input[size..];
    value
}

/// RDB's length encoding.
fn encode_length(value: u64) -> Vec<u8> {
    if value < 1 << 6 {
        vec![value as u8]
    } else if value < 1 << 14 {
        vec![0x40 | (value >> 8) as u8, value as u8]
    } else if value <= u64::from(u32::MAX) {
        let mut out = vec![0x80];
        out.extend((value as u32).to_be_bytes());
        out
    } else {
        let mut out = vec![0x81];
        out.extend(value.to_be_bytes());
        out
    }
}

/// Redis's CRC-64 (Jones polynomial, reflected input and output, initial value 0).
pub fn crc64(data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5; // 0xad93d23594c935a9 reflected
    let mut crc = 0u64;
    for &byte in data {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}
