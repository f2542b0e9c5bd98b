import Foundation

/// The default FIDO UAF metadata: the statements nevisFIDO ships for the Nevis authenticators (seed
/// `001_73adbe519082f24f.txt`, "Default Nevis Authenticator Metadata", copied verbatim), with two documented
/// additions:
/// - the Android statements (`F1D0#000x`) also list `authenticationAlgorithms: [2, 9]` and
///   `publicKeyAlgAndEncodings: [257, 259]`, because the seed's algorithm table (000, §4.3.2) says those
///   authenticators sign with ECDSA P-256 DER or RSA PKCS#1 DER, while the single numbers of the statements
///   name only the legacy RSA algorithm;
/// - statements for the password authenticators `F1D0#0005` (Android) and `F1D0#1005` (iOS), shaped like the
///   PIN statements of their platform, as the seed's table lists them with the same algorithms.
public enum DefaultMetadata {
    /// The statements parsed. The JSON is a constant of this file and a unit test parses it, so a failure here
    /// is a build defect, not an input error.
    public static let statements: [MetadataStatement] = {
        do { return try MetadataStore.statements(fromJSON: Data(json.utf8)) } catch { preconditionFailure("DefaultMetadata.json: \(error)") }
    }()

    public static let json = #"""
[
  {
    "aaid": "F1D0#0001",
    "description": "Android NEVIS Mobile Authentication PIN Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 4
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 9,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 1,
    "matcherProtection": 1,
    "publicKeyAlgAndEncoding": 256,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain",
    "authenticationAlgorithms": [
      2,
      9
    ],
    "publicKeyAlgAndEncodings": [
      257,
      259
    ]
  },
  {
    "aaid": "F1D0#0002",
    "description": "Android NEVIS Mobile Authentication Fingerprint Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 2
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 9,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 4,
    "matcherProtection": 2,
    "publicKeyAlgAndEncoding": 256,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain",
    "authenticationAlgorithms": [
      2,
      9
    ],
    "publicKeyAlgAndEncodings": [
      257,
      259
    ]
  },
  {
    "aaid": "F1D0#0003",
    "description": "Android NEVIS Mobile Authentication Biometric Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 346
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 9,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 4,
    "matcherProtection": 2,
    "publicKeyAlgAndEncoding": 256,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain",
    "authenticationAlgorithms": [
      2,
      9
    ],
    "publicKeyAlgAndEncodings": [
      257,
      259
    ]
  },
  {
    "aaid": "F1D0#0004",
    "description": "Android NEVIS Mobile Authentication Device Passcode Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 132
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 9,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 4,
    "matcherProtection": 2,
    "publicKeyAlgAndEncoding": 259,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain",
    "authenticationAlgorithms": [
      2,
      9
    ],
    "publicKeyAlgAndEncodings": [
      257,
      259
    ]
  },
  {
    "aaid": "F1D0#0005",
    "description": "Android NEVIS Mobile Authentication Password Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 4
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 9,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 1,
    "matcherProtection": 1,
    "publicKeyAlgAndEncoding": 256,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain",
    "authenticationAlgorithms": [
      2,
      9
    ],
    "publicKeyAlgAndEncodings": [
      257,
      259
    ]
  },
  {
    "aaid": "F1D0#1001",
    "description": "iOS NEVIS Mobile Authentication PIN Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 4
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 2,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 1,
    "matcherProtection": 1,
    "publicKeyAlgAndEncoding": 257,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain"
  },
  {
    "aaid": "F1D0#1002",
    "description": "iOS NEVIS Mobile Authentication Fingerprint Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 2
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 2,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 6,
    "matcherProtection": 2,
    "publicKeyAlgAndEncoding": 257,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain"
  },
  {
    "aaid": "F1D0#1003",
    "description": "iOS NEVIS Mobile Authentication Face Recognition Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 16
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 2,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 6,
    "matcherProtection": 2,
    "publicKeyAlgAndEncoding": 257,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain"
  },
  {
    "aaid": "F1D0#1004",
    "description": "iOS NEVIS Mobile Authentication Device Passcode Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 4
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 2,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 6,
    "matcherProtection": 2,
    "publicKeyAlgAndEncoding": 257,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain"
  },
  {
    "aaid": "F1D0#1005",
    "description": "iOS NEVIS Mobile Authentication Password Authenticator",
    "assertionScheme": "UAFV1TLV",
    "attestationRootCertificates": [],
    "attestationTypes": [
      15880
    ],
    "upv": [
      {
        "major": 1,
        "minor": 1
      }
    ],
    "userVerificationDetails": [
      [
        {
          "userVerification": 4
        }
      ]
    ],
    "attachmentHint": 1,
    "authenticationAlgorithm": 2,
    "authenticatorVersion": 1,
    "isSecondFactorOnly": false,
    "keyProtection": 1,
    "matcherProtection": 1,
    "publicKeyAlgAndEncoding": 257,
    "tcDisplay": 1,
    "tcDisplayContentType": "text/plain"
  }
]
"""#
}
