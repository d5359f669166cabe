use hugepage::Allocator;
use mempool::{lcore, Mempool, PacketBatch, PoolConfig};

#[test]
fn alloc_free_roundtrip_with_and_without_cache() {
    let pool = Mempool::new("smoke", &PoolConfig::with_size(1000), &Allocator::no_huge()).unwrap();
    assert!(pool.is_full());
    let mut batch = PacketBatch::with_capacity(64);
    assert!(batch.alloc_from(&pool, 64));
    assert_eq!(pool.in_use(), 64);
    for m in batch.iter_mut() {
        assert!(m.set_len(60));
        m.data_mut().fill(0xab);
        assert_eq!(m.headroom(), 128);
        assert_eq!(m.data_iova(), m.buf_iova() + 128);
    }
    batch.clear();
    assert!(pool.is_full());
    let _g = lcore::bind_current_thread(3).unwrap();
    for _ in 0..100 {
        assert!(batch.alloc_from(&pool, 32));
        batch.clear();
    }
    assert!(pool.is_full());
    let m = pool.alloc().unwrap();
    assert_eq!(m.data_len(), 0, "buffers come back reset");
    drop(m);
    assert!(pool.is_full());
}
