import { Type } from 'typebox';
import { Email, Nullable } from '../../http/schema-helpers.ts';
import { DeviceIdentifier, DeviceName } from '../licenses/schemas.ts';

export const StartTrialBody = Type.Object({
  productId: Type.String({ minLength: 1, maxLength: 64 }),
  deviceIdentifier: DeviceIdentifier,
  deviceName: DeviceName,
  email: Type.Optional(Nullable(Email)),
});
