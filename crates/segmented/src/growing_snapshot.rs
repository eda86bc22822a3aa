//! Snapshots of a [`GrowingFilter`]: every layer in one checksummed snapshot of kind
//! `GROWING`, in the workspace's shared format (`url_dedup_bloom::snapshot`).
//!
//! Parameter block:
//!
//! ```text
//! first_capacity u64 | target_fpr f64 | factor u32 | tightening f64 | segment_bits u64 |
//! placement u16 | hash algorithm u16 | key [u8; 16] | layers u16 |
//! per layer: segments u64 | segment_bits u64 | hashes u32 | capacity u64 | fpr f64 |
//! admitted u64
//! ```
//!
//! (`f64` as its IEEE bits in a little-endian `u64`.) A layer's segment size may differ from
//! the plan's: a filter whose layers came from another store (a shared filter in Redis)
//! keeps that store's geometry. The payload is every layer's words, oldest layer first, each
//! layer segment after segment, as in a `SEGMENTED` snapshot. A reader checks every field
//! (ranges, geometry, the announced payload against the layers) before it allocates, then
//! reads the payload straight into the layers' stores.

use std::io::{Read, Write};

use url_dedup_bloom::hash::{HashAlgorithm, HashKey, ItemHasher};
use url_dedup_bloom::sizing::Growth;
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params, ParamsReader, SnapshotError};

use crate::growing::{GrowingFilter, GrowthPlan, Layer, MAX_LAYERS};
use crate::persist::{SegmentWords, read_into_stores};
use crate::{Error, Layout, MemoryStore, Placement};

/// Layout of the parameter block; bump when it changes.
const FORMAT: u16 = 1;

impl<H: ItemHasher> GrowingFilter<H> {
    /// Writes every layer as one `GROWING` snapshot. Each segment is copied under its lock,
    /// so other threads may keep inserting meanwhile (what they insert may or may not be in
    /// the snapshot). A layer added while the snapshot is written is left for the next one.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when the writer fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::GrowingFilter;
    ///
    /// let f = GrowingFilter::builder().expected_items(100).build()?;
    /// (0..1_000).for_each(|i| { f.check_and_insert(format!("https://example.com/{i}")); });
    /// let mut bytes = Vec::new();
    /// f.write_to(&mut bytes)?;
    ///
    /// let g: GrowingFilter = GrowingFilter::read_from(&bytes[..])?;
    /// assert_eq!(g.layers(), f.layers());
    /// assert_eq!(g.admitted(), f.admitted());
    /// assert!(g.contains("https://example.com/500"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let layers: Vec<&Layer> = self.live_layers().collect();
        let plan = self.plan;
        let mut p = Params::new();
        p.put_u16(FORMAT)
            .put_u64(plan.first_capacity)
            .put_u64(plan.target_fpr.to_bits())
            .put_u32(plan.growth.factor)
            .put_u64(plan.growth.tightening.to_bits())
            .put_u64(plan.segment_bits)
            .put_u16(plan.placement.code())
            .put_u16(H::ALGORITHM.0)
            .put_bytes(&self.key().to_bytes())
            .put_u16(layers.len() as u16);
        for layer in &layers {
            p.put_u64(layer.layout.segments())
                .put_u64(layer.layout.segment_bits())
                .put_u32(layer.layout.hashes())
                .put_u64(layer.capacity)
                .put_u64(layer.fpr.to_bits())
                .put_u64(layer.store.admitted());
        }
        let words: u64 = layers.iter().map(|l| l.layout.words()).sum();
        let payload = layers
            .iter()
            .flat_map(|layer| SegmentWords::new(&layer.store));
        let result = snapshot::write(out, Kind::GROWING, p.as_bytes(), words, payload);
        if result.is_err() {
            for layer in &layers {
                layer.store.mark_all_dirty();
            }
        }
        Ok(result?)
    }

    /// Reads a filter written by [`write_to`](Self::write_to), accepting payloads up to the
    /// default [`Limits`].
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] for damaged, truncated or oversized input, [`Error::Incompatible`]
    /// for another hash algorithm, [`Error::OutOfMemory`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::GrowingFilter;
    ///
    /// assert!(GrowingFilter::<url_dedup_bloom::SipHash13>::read_from(&b"not a snapshot"[..]).is_err());
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::read_from_with_limits(input, Limits::default())
    }

    /// [`read_from`](Self::read_from) with explicit size limits: pass the input's length
    /// when it is known (a file), so that a header announcing more than the input holds is
    /// refused before anything is allocated.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from); [`SnapshotError::TooLarge`] beyond `limits`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{snapshot::Limits, SipHash13};
    /// use url_dedup_segmented::GrowingFilter;
    ///
    /// let mut bytes = Vec::new();
    /// GrowingFilter::builder().expected_items(100_000).build()?.write_to(&mut bytes)?;
    /// let tight = Limits { max_payload_bytes: 1024 };
    /// assert!(GrowingFilter::<SipHash13>::read_from_with_limits(&bytes[..], tight).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn read_from_with_limits<R: Read>(mut input: R, limits: Limits) -> Result<Self, Error> {
        let header = snapshot::read_header(&mut input, Kind::GROWING, limits)?;
        let mut r = header.params();
        if r.u16()? != FORMAT {
            return Err(invalid("unknown growing filter layout version"));
        }
        let plan = GrowthPlan {
            first_capacity: r.u64()?,
            target_fpr: f64::from_bits(r.u64()?),
            growth: Growth {
                factor: r.u32()?,
                tightening: f64::from_bits(r.u64()?),
            },
            segment_bits: r.u64()?,
            placement: Placement::from_code(r.u16()?).ok_or(invalid("unknown bit placement"))?,
        };
        plan.validate()
            .map_err(|_| invalid("invalid growth plan"))?;
        if HashAlgorithm(r.u16()?) != H::ALGORITHM {
            return Err(Error::Incompatible(
                "written with a different hash algorithm",
            ));
        }
        let key = HashKey::from_bytes(r.bytes()?);
        let count = usize::from(r.u16()?);
        if count == 0 || count > MAX_LAYERS {
            return Err(invalid("a growing filter has 1 to 40 layers"));
        }
        let shapes = (0..count)
            .map(|_| read_layer(&mut r, &plan))
            .collect::<Result<Vec<_>, Error>>()?;
        if !r.is_empty() {
            return Err(invalid("trailing bytes in the parameter block"));
        }
        let words = shapes
            .iter()
            .try_fold(0u64, |sum, s| sum.checked_add(s.layout.words()));
        if words != Some(header.payload_words()) {
            return Err(invalid("payload length does not match the layers"));
        }
        let mut stores = shapes
            .iter()
            .map(|s| MemoryStore::new(s.layout))
            .collect::<Result<Vec<_>, Error>>()?;
        read_into_stores(
            &header,
            &mut input,
            &mut stores.iter_mut().collect::<Vec<_>>(),
        )?;
        let layers = shapes
            .into_iter()
            .zip(stores)
            .map(|(shape, mut store)| {
                store.set_admitted(shape.admitted);
                Layer::new(shape.layout, shape.capacity, shape.fpr, store)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        GrowingFilter::from_layers(H::from_key(key), plan, layers)
    }
}

/// One layer's entry in the parameter block.
struct Shape {
    layout: Layout,
    capacity: u64,
    fpr: f64,
    admitted: u64,
}

fn read_layer(r: &mut ParamsReader<'_>, plan: &GrowthPlan) -> Result<Shape, Error> {
    let segments = r.u64()?;
    let segment_bits = r.u64()?;
    let hashes = r.u32()?;
    let capacity = r.u64()?;
    let fpr = f64::from_bits(r.u64()?);
    let admitted = r.u64()?;
    let layout = Layout::with_placement(segments, segment_bits, hashes, plan.placement)
        .map_err(|_| invalid("invalid layer geometry"))?;
    if capacity == 0 || !(fpr > 0.0 && fpr < 1.0) {
        return Err(invalid("invalid layer capacity or rate"));
    }
    Ok(Shape {
        layout,
        capacity,
        fpr,
        admitted,
    })
}

fn invalid(what: &'static str) -> Error {
    SnapshotError::InvalidParameters(what).into()
}
