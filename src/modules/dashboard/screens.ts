import type { Screen } from './screen.ts';
import { accountScreen } from './screens/account.ts';
import { activityScreen } from './screens/activity.ts';
import { apiKeysScreen } from './screens/api-keys.ts';
import { auditLogScreen } from './screens/audit-log.ts';
import { homeScreen } from './screens/home.ts';
import { offersScreen } from './screens/offers.ts';
import { instanceScreen } from './screens/instance.ts';
import { licensesScreen } from './screens/licenses.ts';
import { membersScreen } from './screens/members.ts';
import { paymentsScreen } from './screens/payments.ts';
import { portalScreen } from './screens/portal.ts';
import { productsScreen } from './screens/products.ts';
import { purchasesScreen } from './screens/purchases.ts';
import { settingsScreen } from './screens/settings.ts';
import { tokensScreen } from './screens/tokens.ts';
import { twoFactorScreen } from './screens/two-factor.ts';
import { webhooksScreen } from './screens/webhooks.ts';

/** The dashboard's screens in navigation order: a new screen is one file in screens/ and one line here. */
export const SCREENS: Screen[] = [homeScreen, productsScreen, tokensScreen, offersScreen, licensesScreen, apiKeysScreen, portalScreen, paymentsScreen, purchasesScreen, webhooksScreen, activityScreen, auditLogScreen, membersScreen, settingsScreen, accountScreen, twoFactorScreen, instanceScreen];
