//! Classic pcap streams: reading any byte string never panics or allocates without bound; every record returned
//! holds at most its captured length, and a stream that ends mid-record is an error, not a short record.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use swports::pcap_file::PcapReader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = PcapReader::new(Cursor::new(data)) else { return };
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Ok(Some(rec)) = reader.next_into(&mut buf) {
        assert_eq!(buf.len(), rec.caplen as usize);
        total += buf.len();
        assert!(total <= data.len(), "more record bytes than the stream holds");
    }
    let _ = reader.rewind();
});
