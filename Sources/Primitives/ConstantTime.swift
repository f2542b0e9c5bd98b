/// Comparisons whose time does not depend on where two secrets differ.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, looking at every byte whatever it finds (only the lengths may end it
    /// early, and lengths are not secret here). Inlinable, so each caller gets a loop specialised to its collections:
    /// left generic, it cost a quarter of a WebAuthn authentication's own work.
    @inlinable
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        var other = b.startIndex
        for byte in a {
            difference |= byte ^ b[other]
            b.formIndex(after: &other)
        }
        return difference == 0
    }
}
