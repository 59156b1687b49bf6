/// How a server store keeps a declared composite index in its field-index rows
/// (``IndexKind/composite``): one row per document of the index's collections that has every
/// field of the index, under the field ``CompositeIndex/entryField``, with the value
/// ``CompositeIndex/entry(of:)``.
///
/// The value is the tuple of the document's values of the index's fields, each in its index
/// encoding in the field's direction (``Value/indexEncoded(descending:)``, prefix-free), then
/// the document id in ``CompositeIndex/documentIDDirection`` — so the rows' value order alone is
/// the order of a query the index serves, ties included — wrapped as the index encoding of one
/// `bytes` value, so that a store reads it back as any other single value. The wrapping (an
/// OrderedCode string) keeps the tuple's bytewise order, and the rows whose leading fields hold
/// given values are one contiguous range (``CompositeIndex/entryRange(leading:)``).
extension CompositeIndex {
    /// The field a store keeps this index's rows under: one segment, the index's ``id`` (the
    /// kind ``IndexKind/composite`` keeps it apart from a document field of the same name).
    package var entryField: FieldPath { Self.entryField(id: id) }

    /// The ``entryField`` of the index with `id` (a store dropping an index knows only its id).
    package static func entryField(id: String) -> FieldPath { FieldPath(unchecked: [id]) }

    /// What `document` contributes to this index.
    package enum Entry: Equatable, Sendable {
        /// The row's value.
        case value([UInt8])
        /// The row would be longer than ``DocumentIndexEntries/maxEncodedValueBytes``: a store
        /// keeps an unindexed marker instead, which a plan reading the index merges in.
        case tooLarge
    }

    /// The entry of `document`, or `nil` when it is not in one of this index's collections or
    /// lacks one of its fields (no query the index serves can match it).
    package func entry(of document: Document) -> Entry? {
        guard document.key.collectionGroup == collectionGroup else { return nil }
        var values: [Value] = []
        values.reserveCapacity(fields.count)
        for field in fields {
            guard let value = document.value(at: field.path) else { return nil }
            values.append(value)
        }
        let encoded = entryValue(values, documentID: document.key.documentID)
        return encoded.count > DocumentIndexEntries.maxEncodedValueBytes ? .tooLarge : .value(encoded)
    }

    /// The row value of a document whose values of the index's fields are `values` (one per
    /// field, in index order) and whose id is `documentID`: also where a walk resumes after a
    /// cursor that names every sort key and the document.
    package func entryValue(_ values: [Value], documentID: String) -> [UInt8] {
        var tuple: [UInt8] = []
        tuple.reserveCapacity(64)
        for (value, field) in zip(values, fields) {
            tuple.append(contentsOf: value.indexEncoded(descending: field.direction == .descending))
        }
        tuple.append(contentsOf: Value.string(documentID).indexEncoded(descending: documentIDDirection == .descending))
        return Self.wrap(tuple, terminated: true)
    }

    /// The range of entry values whose first fields hold `leading` (in index order; fewer
    /// values than fields): `lower` inclusive, `upper` exclusive (`nil`: no upper end).
    package func entryRange(leading: [Value]) -> (lower: [UInt8], upper: [UInt8]?) {
        entryRange(leading: leading, nextLower: nil, nextUpper: nil)
    }

    /// One end of a range of a field's values: an ascending index encoding
    /// (``Value/indexEncoded(descending:)``), or a one-byte type tag that brackets every value
    /// of a type, and whether the encodings that start with it are in the range.
    package typealias EncodedBound = (encoded: [UInt8], inclusive: Bool)

    /// The range of entry values whose first fields hold `leading` (fewer values than fields)
    /// and whose next field's value is within `nextLower`...`nextUpper` (`nil`: open), as
    /// ascending encodings in value order whatever the field's direction; `lower` inclusive,
    /// `upper` exclusive (`nil`: no upper end). An exclusive lower end and an inclusive upper
    /// end reach past every encoding that starts with the bound, as a field index's range does.
    ///
    /// The encodings are prefix-free, so the entries whose next field's encoding starts with a
    /// bound are the entries whose tuple starts with the leading values and the bound: one
    /// contiguous range, from that prefix (wrapped without its terminator) to its
    /// ``OrderedCode/prefixSuccessor(_:)``. A descending field holds the inverted encodings,
    /// whose order is the reverse: its lower end comes from `nextUpper` and its upper end from
    /// `nextLower`, each inverted, with the same inclusivity.
    package func entryRange(leading: [Value], nextLower: EncodedBound?, nextUpper: EncodedBound?) -> (lower: [UInt8], upper: [UInt8]?) {
        var tuple: [UInt8] = []
        for (value, field) in zip(leading, fields) {
            tuple.append(contentsOf: value.indexEncoded(descending: field.direction == .descending))
        }
        let start = Self.wrap(tuple, terminated: false)
        guard leading.count < fields.count else { return (start, OrderedCode.prefixSuccessor(start)) }
        var (low, high) = (nextLower, nextUpper)
        if fields[leading.count].direction == .descending {
            func inverted(_ bound: EncodedBound) -> EncodedBound {
                var encoded = bound.encoded
                OrderedCode.invert(&encoded, from: 0)
                return (encoded, bound.inclusive)
            }
            (low, high) = (nextUpper.map(inverted), nextLower.map(inverted))
        }
        /// The start of the entries whose next field's encoding starts with `bound`.
        func prefix(_ bound: EncodedBound) -> [UInt8] { Self.wrap(tuple + bound.encoded, terminated: false) }
        // A wrapped tuple starts with the `bytes` tag, never 0xFF: it always has a successor.
        let lower = low.map { $0.inclusive ? prefix($0) : OrderedCode.prefixSuccessor(prefix($0))! } ?? start
        let upper = high.map { $0.inclusive ? OrderedCode.prefixSuccessor(prefix($0)) : prefix($0) } ?? OrderedCode.prefixSuccessor(start)
        return (lower, upper)
    }

    /// `tuple` as the index encoding of a `bytes` value; without the terminator, the common
    /// start of every longer tuple's encoding.
    private static func wrap(_ tuple: [UInt8], terminated: Bool) -> [UInt8] {
        var out = [IndexValueEncoding.Tag.bytes]
        out.reserveCapacity(tuple.count + 8)
        OrderedCode.appendString(tuple, to: &out)
        if !terminated { out.removeLast(2) }
        return out
    }
}
