import Foundation
import Primitives
import SQLKit
import UAF
import WireJSON

/// Why a store refused or failed.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// (AAID, KeyID) is already registered.
    case duplicateRegistration
    /// A row could not be read back; the message says which.
    case malformedRow(String)

    public var description: String {
        switch self {
        case .duplicateRegistration: return "this (AAID, KeyID) is already registered"
        case .malformedRow(let detail): return "malformed row: \(detail)"
        }
    }
}
