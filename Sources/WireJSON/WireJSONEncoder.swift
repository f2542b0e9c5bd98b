import Foundation

/// Encodes `Encodable` values as the compact JSON of wire messages: byte for byte what Foundation's `JSONEncoder`
/// writes with `[.sortedKeys, .withoutEscapingSlashes]` and its default strategies (Date as seconds since 2001,
/// Data as base64, floats that are not finite refused), about three times as fast. With `dateEncoding:
/// .secondsSince1970` a Date is written as `JSONEncoder`'s `.secondsSince1970` writes it (for JWT claims).
///
/// Why it exists: every login encodes a UAF request, a response body and its messages, and `JSONEncoder` first
/// builds a tree of boxed values, then serialises it. This encoder writes bytes as the value's `encode(to:)` runs
/// and sorts an object's members once, when the object ends. `WireJSONTests` checks it against `JSONEncoder` on every
/// wire type and on random values.
///
/// Keys are sorted by their UTF-8 bytes (as `JSONEncoder` does); a key written twice keeps its last value (as
/// `JSONEncoder` does). `codingPath` is always empty: no type of ours reads it, and keeping it costs an array per
/// value. Containers nested with `nestedContainer` or `superEncoder` must be written before their parent is
/// written to again (every synthesized and hand-written `encode(to:)` of ours does); interleaving them throws.
public struct WireJSONEncoder: Sendable {
    /// How a `Date` is written: as seconds since 2001 (`JSONEncoder`'s default, what every wire message uses), or as
    /// seconds since 1970 (`JSONEncoder`'s `.secondsSince1970`: a JWT's NumericDate, RFC 7519 section 2).
    public enum DateEncoding: Sendable {
        case secondsSinceReferenceDate
        case secondsSince1970
    }

    public let dateEncoding: DateEncoding

    public init(dateEncoding: DateEncoding = .secondsSinceReferenceDate) { self.dateEncoding = dateEncoding }

    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let sink = JSONSink(dateEncoding: dateEncoding)
        try sink.encodeTopLevel(value)
        return sink.bytes
    }

    public func encodeToString<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }

    public func encodeToData<T: Encodable>(_ value: T) throws -> Data {
        Data(try encode(value))
    }
}

/// The bytes written so far and the values still open (a value is open while its `encode(to:)` runs).
///
/// Its fields skip Swift's run-time exclusivity checks, which took 40 % of the encoding time: one sink belongs to one
/// `encode` call on one thread, and no method keeps a field borrowed while it calls a value's `encode(to:)`.
final class JSONSink {
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// Members of the open objects, innermost last: where each member's `"key":value` starts and ends.
    @exclusivity(unchecked) private var members: [Member] = []
    @exclusivity(unchecked) private var frames: [Frame] = []
    @exclusivity(unchecked) private var nextFrameID = 0
    /// Scratch buffers of ``sortMembers(from:)``: the members' order, and the object's bytes in that order.
    @exclusivity(unchecked) private var order: [Int] = []
    @exclusivity(unchecked) private var region: [UInt8] = []
    /// A misuse found where the protocol gives no way to throw (asking a value for a second kind of container).
    @exclusivity(unchecked) private var misuse: String?

    struct Member {
        var key: String
        var start: Int
        var end: Int
    }

    struct Frame {
        enum Kind { case pending, object, array, single }
        var kind: Kind = .pending
        let id: Int
        let firstMember: Int
        /// The parent's member this value is the value of, whose end is known only when this value ends.
        let ownerMember: Int
        var count = 0
    }

    let dateEncoding: WireJSONEncoder.DateEncoding

    init(dateEncoding: WireJSONEncoder.DateEncoding) {
        self.dateEncoding = dateEncoding
        bytes.reserveCapacity(512)
    }

    func encodeTopLevel<T: Encodable>(_ value: T) throws {
        if try writeScalar(value) { return }
        let id = push(ownerMember: -1)
        try encode(value, frameID: id)
        try reachFrame(id)
        guard frames.last?.kind != .pending else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        try closeFrame()
        guard frames.isEmpty else { throw invalid("a container was left open") }
    }

    /// Writes one value in place: a scalar directly, anything else through its own `encode(to:)`.
    func encodeValue<T: Encodable>(_ value: T, ownerMember: Int) throws {
        if try writeScalar(value) { return }
        let id = push(ownerMember: ownerMember)
        try encode(value, frameID: id)
        try reachFrame(id)
        try closeFrame()
    }

    /// Runs the value's own `encode(to:)`. If it throws, the sink refuses every later write: a caller that catches
    /// the error and goes on (`try?` inside an `encode(to:)`) must not get a document with half a value in it.
    private func encode<T: Encodable>(_ value: T, frameID: Int) throws {
        do { try value.encode(to: WireEncoderImpl(sink: self, frameID: frameID)) } catch {
            if misuse == nil { misuse = "a value failed to encode: \(error)" }
            throw error
        }
    }

    // MARK: frames

    func push(ownerMember: Int) -> Int {
        let id = nextFrameID
        nextFrameID += 1
        // Room for a typical message's nesting and members at the first container, instead of growing both arrays
        // one doubling at a time (about ten allocations of every message encoded).
        if frames.capacity == 0 {
            frames.reserveCapacity(8)
            members.reserveCapacity(32)
        }
        frames.append(Frame(id: id, firstMember: members.count, ownerMember: ownerMember))
        return id
    }

    /// Makes frame `id` the innermost open one, closing the containers nested in it (they are finished once their
    /// parent is written to again). A frame already closed means containers were interleaved.
    func reachFrame(_ id: Int) throws {
        if let misuse { throw invalid(misuse) }
        while let last = frames.last, last.id != id {
            guard last.id > id else { throw invalid("a container was written to after its parent went on") }
            try closeFrame()
        }
        guard !frames.isEmpty else { throw invalid("a container was written to after its value ended") }
    }

    func begin(_ kind: Frame.Kind, frameID: Int) {
        guard let index = frames.lastIndex(where: { $0.id == frameID }) else {
            misuse = "a container was asked for after its value ended"
            return
        }
        do { try reachFrame(frameID) } catch {
            misuse = "\(error)"
            return
        }
        switch (frames[index].kind, kind) {
        case (.pending, .object): bytes.append(UInt8(ascii: "{"))
        case (.pending, .array): bytes.append(UInt8(ascii: "["))
        case (.pending, .single): break
        case (.object, .object), (.array, .array), (.single, .single): return
        default:
            misuse = "a value asked for two different kinds of container"
            return
        }
        frames[index].kind = kind
    }

    private func closeFrame() throws {
        let frame = frames.removeLast()
        switch frame.kind {
        case .pending:
            bytes.append(UInt8(ascii: "{"))
            bytes.append(UInt8(ascii: "}"))
        case .object:
            sortMembers(from: frame.firstMember)
            members.removeSubrange(frame.firstMember...)
            bytes.append(UInt8(ascii: "}"))
        case .array:
            bytes.append(UInt8(ascii: "]"))
        case .single:
            guard frame.count > 0 else { throw invalid("a single value container encoded nothing") }
        }
        if frame.ownerMember >= 0 { members[frame.ownerMember].end = bytes.count }
    }

    /// Puts an object's members in key order (UTF-8 bytes), keeping only the last of a repeated key.
    private func sortMembers(from first: Int) {
        let count = members.count - first
        guard count > 1 else { return }
        var ordered = true
        for index in (first + 1)..<members.count where !Self.precedes(members[index - 1].key, members[index].key) {
            ordered = false
            break
        }
        if ordered { return }
        let start = members[first].start
        let end = members[members.count - 1].end
        // The order and the reordered bytes go through buffers the sink keeps, so a message with several unordered
        // objects allocates them once, each reserved for the whole object first: appended to one member at a time,
        // they grew a doubling at a time (about twenty allocations of a login's messages).
        order.removeAll(keepingCapacity: true)
        order.reserveCapacity(count)
        order.append(contentsOf: first..<members.count)
        order.sort { a, b in
            members[a].key == members[b].key ? a < b : Self.precedes(members[a].key, members[b].key)
        }
        region.removeAll(keepingCapacity: true)
        region.reserveCapacity(end - start)
        for (position, index) in order.enumerated() {
            if position + 1 < order.count, members[order[position + 1]].key == members[index].key { continue }
            if !region.isEmpty { region.append(UInt8(ascii: ",")) }
            region.append(contentsOf: bytes[members[index].start..<members[index].end])
        }
        bytes.replaceSubrange(start..<end, with: region)
    }

    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    // MARK: members and elements

    /// Starts the next member of object frame `frameID` and returns its index; the caller writes its value.
    func beginMember(_ key: String, frameID: Int) throws -> Int {
        try reachFrame(frameID)
        if frames[frames.count - 1].count > 0 { bytes.append(UInt8(ascii: ",")) }
        frames[frames.count - 1].count += 1
        let start = bytes.count
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
        members.append(Member(key: key, start: start, end: start))
        return members.count - 1
    }

    func endMember(_ index: Int) { members[index].end = bytes.count }

    /// Starts the next element of array frame `frameID`.
    func beginElement(frameID: Int) throws {
        try reachFrame(frameID)
        if frames[frames.count - 1].count > 0 { bytes.append(UInt8(ascii: ",")) }
        frames[frames.count - 1].count += 1
    }

    func count(of frameID: Int) -> Int { frames.last(where: { $0.id == frameID })?.count ?? 0 }

    /// Starts the one value of single-value frame `frameID`.
    func beginSingle(frameID: Int) throws {
        try reachFrame(frameID)
        guard frames[frames.count - 1].count == 0 else { throw invalid("a single value container encoded two values") }
        frames[frames.count - 1].count = 1
    }

    // MARK: scalars

    /// Writes `value` if it is a scalar or one of the types `JSONEncoder` writes specially; false otherwise.
    func writeScalar<T: Encodable>(_ value: T) throws -> Bool {
        if T.self == String.self {
            writeString(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            writeInteger(unsafeBitCast(value, to: Int.self))
        } else if T.self == Bool.self {
            writeBool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == Int64.self {
            writeInteger(unsafeBitCast(value, to: Int64.self))
        } else if T.self == UInt8.self {
            writeInteger(unsafeBitCast(value, to: UInt8.self))
        } else if T.self == UInt16.self {
            writeInteger(unsafeBitCast(value, to: UInt16.self))
        } else if T.self == UInt32.self {
            writeInteger(unsafeBitCast(value, to: UInt32.self))
        } else if T.self == UInt64.self {
            writeInteger(unsafeBitCast(value, to: UInt64.self))
        } else if T.self == UInt.self {
            writeInteger(unsafeBitCast(value, to: UInt.self))
        } else if T.self == Int8.self {
            writeInteger(unsafeBitCast(value, to: Int8.self))
        } else if T.self == Int16.self {
            writeInteger(unsafeBitCast(value, to: Int16.self))
        } else if T.self == Int32.self {
            writeInteger(unsafeBitCast(value, to: Int32.self))
        } else if T.self == Double.self {
            try writeDouble(unsafeBitCast(value, to: Double.self))
        } else if T.self == Float.self {
            try writeFloat(unsafeBitCast(value, to: Float.self))
        } else if T.self == Data.self {
            writeString(unsafeBitCast(value, to: Data.self).base64EncodedString())
        } else if T.self == Date.self {
            let date = unsafeBitCast(value, to: Date.self)
            try writeDouble(dateEncoding == .secondsSince1970 ? date.timeIntervalSince1970 : date.timeIntervalSinceReferenceDate)
        } else if T.self == URL.self {
            writeString(unsafeBitCast(value, to: URL.self).absoluteString)
        } else if T.self == Decimal.self {
            writeASCII(unsafeBitCast(value, to: Decimal.self).description)
        } else {
            return false
        }
        return true
    }

    func writeNull() { writeASCII("null") }

    func writeBool(_ value: Bool) { writeASCII(value ? "true" : "false") }

    func writeInteger<I: FixedWidthInteger>(_ value: I) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                buffer[23 - count] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remainder)
                count += 1
                magnitude = quotient
            }
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: buffer[(24 - count)...])
        }
    }

    /// As `JSONEncoder`: the shortest round-tripping form (Swift's `description`), without a trailing ".0".
    func writeDouble(_ value: Double) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        writeASCII(text)
    }

    func writeFloat(_ value: Float) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        writeASCII(text)
    }

    private func writeASCII(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A JSON string as `JSONEncoder` writes it: `"` and `\` escaped, control characters as \b \f \n \r \t or
    /// \u00XX, everything else (slashes and non-ASCII included) as it is.
    func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                runStart = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    func invalid(_ reason: String) -> EncodingError {
        EncodingError.invalidValue(reason, .init(codingPath: [], debugDescription: reason))
    }
}

/// The `Encoder` one value is given; all of its containers write into frame `frameID`.
struct WireEncoderImpl: Encoder {
    let sink: JSONSink
    let frameID: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        sink.begin(.object, frameID: frameID)
        return KeyedEncodingContainer(WireKeyedEncoder<Key>(sink: sink, frameID: frameID))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        sink.begin(.array, frameID: frameID)
        return WireUnkeyedEncoder(sink: sink, frameID: frameID)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        sink.begin(.single, frameID: frameID)
        return WireSingleValueEncoder(sink: sink, frameID: frameID)
    }
}

struct WireKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let sink: JSONSink
    let frameID: Int
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws {
        let member = try sink.beginMember(key.stringValue, frameID: frameID)
        sink.writeNull()
        sink.endMember(member)
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        let member = try sink.beginMember(key.stringValue, frameID: frameID)
        sink.writeBool(value)
        sink.endMember(member)
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        let member = try sink.beginMember(key.stringValue, frameID: frameID)
        sink.writeString(value)
        sink.endMember(member)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        let member = try sink.beginMember(key.stringValue, frameID: frameID)
        sink.writeInteger(value)
        sink.endMember(member)
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let member = try sink.beginMember(key.stringValue, frameID: frameID)
        try sink.encodeValue(value, ownerMember: member)
        sink.endMember(member)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        nestedEncoder(key).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        nestedEncoder(key).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { nestedEncoder(nil) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { nestedEncoder(key) }

    /// An encoder for a member whose value is written later, through the returned encoder; it ends when the
    /// object is next written to or ends itself.
    private func nestedEncoder(_ key: Key?) -> WireEncoderImpl {
        do {
            let member = try sink.beginMember(key?.stringValue ?? "super", frameID: frameID)
            return WireEncoderImpl(sink: sink, frameID: sink.push(ownerMember: member))
        } catch {
            return WireEncoderImpl(sink: sink, frameID: Int.max)
        }
    }
}

struct WireUnkeyedEncoder: UnkeyedEncodingContainer {
    let sink: JSONSink
    let frameID: Int
    var codingPath: [any CodingKey] { [] }
    var count: Int { sink.count(of: frameID) }

    mutating func encodeNil() throws {
        try sink.beginElement(frameID: frameID)
        sink.writeNull()
    }
    mutating func encode(_ value: String) throws {
        try sink.beginElement(frameID: frameID)
        sink.writeString(value)
    }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try sink.beginElement(frameID: frameID)
        try sink.encodeValue(value, ownerMember: -1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        nestedEncoder().container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { nestedEncoder().unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { nestedEncoder() }

    private func nestedEncoder() -> WireEncoderImpl {
        do {
            try sink.beginElement(frameID: frameID)
            return WireEncoderImpl(sink: sink, frameID: sink.push(ownerMember: -1))
        } catch {
            return WireEncoderImpl(sink: sink, frameID: Int.max)
        }
    }
}

struct WireSingleValueEncoder: SingleValueEncodingContainer {
    let sink: JSONSink
    let frameID: Int
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil() throws {
        try sink.beginSingle(frameID: frameID)
        sink.writeNull()
    }
    mutating func encode(_ value: String) throws {
        try sink.beginSingle(frameID: frameID)
        sink.writeString(value)
    }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try sink.beginSingle(frameID: frameID)
        try sink.encodeValue(value, ownerMember: -1)
    }
}
