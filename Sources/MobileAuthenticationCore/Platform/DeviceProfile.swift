/// The device family an SDK instance behaves as. It fixes the AAIDs (iOS `F1D0#100x`, Android `F1D0#000x`,
/// seed 001), the algorithms each authenticator can sign with (seed 000 §4.3.2) and which keys a removed device
/// lock wipes (seed 000, "Authentication Key Revocation Scenarios").
public enum DeviceProfile: String, Sendable, Codable, CaseIterable {
    case ios
    case android
}
