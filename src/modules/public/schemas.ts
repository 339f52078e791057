import { Type } from 'typebox';
import { Nullable, StringEnum } from '../../http/schema-helpers.ts';
import type { Failure } from '../licenses/checks.ts';
import { DeviceIdentifier, DeviceName, PublicDeviceBody, PublicLicenseBody, ValidStatus } from '../licenses/schemas.ts';

export const LicenseKeyInput = Type.String({ minLength: 1, maxLength: 64 });

/** A string, or an array for apps that accept several products (tiers). */
export const ProductIdInput = Type.Union([
  Type.String({ minLength: 1, maxLength: 64 }),
  Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 20 }),
]);

export const PublicActivateBody = Type.Object({
  licenseKey: LicenseKeyInput,
  deviceIdentifier: DeviceIdentifier,
  deviceName: DeviceName,
  productId: ProductIdInput,
});

export const PublicLicenseQuery = Type.Object({
  licenseKey: LicenseKeyInput,
  deviceIdentifier: DeviceIdentifier,
  productId: ProductIdInput,
});

export const PublicActivationResult = Type.Object({
  isValid: Type.Boolean(),
  status: ValidStatus,
  token: Type.Optional(Type.String({ description: 'Signed license token; present when the product has license tokens enabled.' })),
  device: PublicDeviceBody,
  license: PublicLicenseBody,
});

export const PublicValidationResult = Type.Object({
  isValid: Type.Boolean(),
  status: Nullable(ValidStatus),
  device: Nullable(PublicDeviceBody),
  license: Nullable(PublicLicenseBody),
  reason: Type.Optional(
    StringEnum<Failure>(['not_found', 'product_mismatch', 'revoked', 'expired', 'device_not_activated'], { description: 'Why the license is not valid.' }),
  ),
});
